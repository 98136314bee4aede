package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"readpast/internal/queue"
)

// RegisterNode implements queue.NodeStore.
func (s *Store) RegisterNode(ctx context.Context, n queue.Node) error {
	return s.write(ctx, "registering node "+n.ID, func(ctx context.Context, tx *sql.Tx, now int64) error {
		_, err := tx.Exec(`INSERT INTO readpast_nodes (id, hostname, pid, version, started_at, heartbeat_at, stopped_at, info)
			VALUES (?, ?, ?, ?, ?, ?, NULL, ?)
			ON CONFLICT (id) DO UPDATE SET hostname = excluded.hostname, pid = excluded.pid, version = excluded.version,
			started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at, stopped_at = NULL, info = excluded.info`,
			n.ID, n.Hostname, n.PID, n.Version, now, now, orEmptyJSON(n.Info))
		return err
	})
}

// HeartbeatNode implements queue.NodeStore.
func (s *Store) HeartbeatNode(ctx context.Context, id, info string) error {
	return s.write(ctx, "heartbeating node "+id, func(ctx context.Context, tx *sql.Tx, now int64) error {
		r, err := tx.Exec(`UPDATE readpast_nodes SET heartbeat_at = ?, info = ?, stopped_at = NULL WHERE id = ?`, now, orEmptyJSON(info), id)
		if err != nil {
			return err
		}
		if n, _ := r.RowsAffected(); n == 0 {
			return fmt.Errorf("node %s: %w (register it first)", id, queue.ErrNotFound)
		}
		return nil
	})
}

// StopNode implements queue.NodeStore.
func (s *Store) StopNode(ctx context.Context, id string) error {
	return s.write(ctx, "stopping node "+id, func(ctx context.Context, tx *sql.Tx, now int64) error {
		_, err := tx.Exec(`UPDATE readpast_nodes SET stopped_at = ?, heartbeat_at = ? WHERE id = ?`, now, now, id)
		return err
	})
}

// Nodes implements queue.NodeStore.
func (s *Store) Nodes(ctx context.Context, goneAfter time.Duration) ([]queue.Node, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, hostname, pid, version, started_at, heartbeat_at, stopped_at, info
		FROM readpast_nodes ORDER BY heartbeat_at DESC, id`)
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	defer rows.Close()
	cutoff := s.nowFor().Add(-goneAfter)
	var out []queue.Node
	for rows.Next() {
		var n queue.Node
		var started, hb int64
		var stopped sql.NullInt64
		if err := rows.Scan(&n.ID, &n.Hostname, &n.PID, &n.Version, &started, &hb, &stopped, &n.Info); err != nil {
			return nil, err
		}
		n.StartedAt, n.HeartbeatAt, n.StoppedAt = fromMicros(started), fromMicros(hb), nullMicros(stopped)
		n.Gone = stopped.Valid || n.HeartbeatAt.Before(cutoff)
		out = append(out, n)
	}
	return out, rows.Err()
}

// PurgeNodes implements queue.NodeStore.
func (s *Store) PurgeNodes(ctx context.Context, cutoff time.Time) (int64, error) {
	var n int64
	err := s.write(ctx, "purging gone nodes", func(ctx context.Context, tx *sql.Tx, _ int64) error {
		r, err := tx.ExecContext(ctx, `DELETE FROM readpast_nodes WHERE heartbeat_at < ?`, micros(cutoff))
		if err == nil {
			n, err = r.RowsAffected()
		}
		return err
	})
	return n, err
}

func orEmptyJSON(s string) string {
	if s == "" {
		return "{}"
	}
	return s
}
