package postgres

import (
	"context"
	"fmt"
	"time"

	"readpast/internal/queue"
)

// RegisterNode implements queue.NodeStore: the node's row is inserted or
// replaced, started and heartbeating now by the database clock.
func (s *Store) RegisterNode(ctx context.Context, n queue.Node) error {
	err := s.exec(ctx, `INSERT INTO readpast_nodes (id, hostname, pid, version, started_at, heartbeat_at, stopped_at, info)
		VALUES ($1, $2, $3, $4, now(), now(), NULL, $5)
		ON CONFLICT (id) DO UPDATE SET hostname = excluded.hostname, pid = excluded.pid, version = excluded.version,
			started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at, stopped_at = NULL, info = excluded.info`,
		n.ID, n.Hostname, n.PID, n.Version, orEmptyJSON(n.Info))
	return wrap(err, "registering node %s", n.ID)
}

// HeartbeatNode implements queue.NodeStore.
func (s *Store) HeartbeatNode(ctx context.Context, id, info string) error {
	tag, err := s.execTag(ctx, `UPDATE readpast_nodes SET heartbeat_at = now(), info = $2, stopped_at = NULL WHERE id = $1`,
		id, orEmptyJSON(info))
	if err != nil {
		return wrap(err, "heartbeating node %s", id)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: heartbeating node %s: %w (register it first)", id, queue.ErrNotFound)
	}
	return nil
}

// StopNode implements queue.NodeStore.
func (s *Store) StopNode(ctx context.Context, id string) error {
	err := s.exec(ctx, `UPDATE readpast_nodes SET stopped_at = now(), heartbeat_at = now() WHERE id = $1`, id)
	return wrap(err, "stopping node %s", id)
}

// Nodes implements queue.NodeStore. Gone is decided by the database clock, so
// nodes with skewed clocks agree on it.
func (s *Store) Nodes(ctx context.Context, goneAfter time.Duration) ([]queue.Node, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, hostname, pid, version, started_at, heartbeat_at, stopped_at, info,
			stopped_at IS NOT NULL OR heartbeat_at < now() - $1 * interval '1 microsecond'
		FROM readpast_nodes ORDER BY heartbeat_at DESC, id`, goneAfter.Microseconds())
	if err != nil {
		return nil, wrap(err, "listing nodes")
	}
	defer rows.Close()
	var out []queue.Node
	for rows.Next() {
		var n queue.Node
		var stopped *time.Time
		if err := rows.Scan(&n.ID, &n.Hostname, &n.PID, &n.Version, &n.StartedAt, &n.HeartbeatAt, &stopped, &n.Info, &n.Gone); err != nil {
			return nil, wrap(err, "listing nodes")
		}
		n.StartedAt, n.HeartbeatAt, n.StoppedAt = n.StartedAt.UTC(), n.HeartbeatAt.UTC(), utc(stopped)
		out = append(out, n)
	}
	return out, wrap(rows.Err(), "listing nodes")
}

// PurgeNodes implements queue.NodeStore.
func (s *Store) PurgeNodes(ctx context.Context, cutoff time.Time) (int64, error) {
	tag, err := s.execTag(ctx, `DELETE FROM readpast_nodes WHERE heartbeat_at < $1`, cutoff)
	if err != nil {
		return 0, wrap(err, "purging gone nodes")
	}
	return tag.RowsAffected(), nil
}

func orEmptyJSON(s string) string {
	if s == "" {
		return "{}"
	}
	return s
}
