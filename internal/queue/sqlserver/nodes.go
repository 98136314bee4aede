package sqlserver

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"readpast/internal/queue"
)

// RegisterNode inserts or replaces the node's row, started and heartbeating now.
func (s *Store) RegisterNode(ctx context.Context, n queue.Node) error {
	if err := checkNodeID(n.ID); err != nil {
		return err
	}
	err := retryDeadlock(ctx, func() error {
		return s.exec(ctx, registerNodeBatch.text, registerNodeArgs(n)...)
	})
	return wrap("registering node "+n.ID, err)
}

// registerNodeArgs binds the register-node batch's parameters.
func registerNodeArgs(n queue.Node) []any {
	return []any{
		sql.Named("id", n.ID),
		sql.Named("hostname", truncate(n.Hostname, 256)),
		sql.Named("pid", n.PID),
		sql.Named("version", truncate(n.Version, 64)),
		sql.Named("info", maxText(orEmptyJSON(n.Info))),
	}
}

// HeartbeatNode marks the node alive now and stores its info JSON.
func (s *Store) HeartbeatNode(ctx context.Context, id, info string) error {
	if err := checkNodeID(id); err != nil {
		return err
	}
	var n int64
	err := retryDeadlock(ctx, func() error {
		return s.write(ctx, func(ctx context.Context, c *sql.Conn) error {
			return c.QueryRowContext(ctx, heartbeatNodeBatch.text, nodeInfoArgs(id, info)...).Scan(&n)
		})
	})
	if err != nil {
		return wrap("heartbeating node "+id, err)
	}
	if n == 0 {
		return fmt.Errorf("heartbeating node %s: %w (register it first)", id, queue.ErrNotFound)
	}
	return nil
}

// nodeInfoArgs binds the heartbeat-node batch's parameters.
func nodeInfoArgs(id, info string) []any {
	return []any{sql.Named("id", id), sql.Named("info", maxText(orEmptyJSON(info)))}
}

// StopNode marks the node stopped (graceful shutdown).
func (s *Store) StopNode(ctx context.Context, id string) error {
	err := retryDeadlock(ctx, func() error {
		return s.exec(ctx, stopNodeBatch.text, stopNodeArgs(id)...)
	})
	return wrap("stopping node "+id, err)
}

// stopNodeArgs binds the stop-node batch's parameter.
func stopNodeArgs(id string) []any { return []any{sql.Named("id", id)} }

// Nodes lists nodes, newest heartbeat first; a node stopped, or silent for
// longer than goneAfter by the database clock, is Gone.
func (s *Store) Nodes(ctx context.Context, goneAfter time.Duration) ([]queue.Node, error) {
	out, err := queryAll(ctx, s.db, nodesQuery.text, nodesArgs(goneAfter), func(r *sql.Rows) (queue.Node, error) {
		var (
			n       queue.Node
			stopped sql.NullTime
		)
		err := r.Scan(&n.ID, &n.Hostname, &n.PID, &n.Version, &n.StartedAt, &n.HeartbeatAt, &stopped, &n.Info, &n.Gone)
		n.StartedAt, n.HeartbeatAt, n.StoppedAt = n.StartedAt.UTC(), n.HeartbeatAt.UTC(), utc(stopped)
		return n, err
	})
	if err != nil {
		return nil, wrap("listing nodes", err)
	}
	return out, nil
}

// nodesArgs binds the nodes query's parameters.
func nodesArgs(goneAfter time.Duration) []any {
	return []any{sql.Named("gone_ms", goneAfter.Milliseconds())}
}

// checkNodeID validates a node id (the primary key is nvarchar(128)).
func checkNodeID(id string) error {
	if id == "" || len(id) > queue.MaxNameLength {
		return &queue.ValidationError{Field: "node_id", Reason: fmt.Sprintf("must be 1 to %d bytes", queue.MaxNameLength)}
	}
	return nil
}

// orEmptyJSON is "{}" for an empty info document.
func orEmptyJSON(s string) string {
	if s == "" {
		return "{}"
	}
	return s
}

// truncate cuts s to at most n runes, for informational columns.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}

// PurgeNodes implements queue.NodeStore.
func (s *Store) PurgeNodes(ctx context.Context, cutoff time.Time) (int64, error) {
	var n int64
	err := retryDeadlock(ctx, func() error {
		return s.write(ctx, func(ctx context.Context, c *sql.Conn) error {
			return c.QueryRowContext(ctx, purgeNodesBatch.text, purgeNodesArgs(cutoff)...).Scan(&n)
		})
	})
	return n, wrap("purging gone nodes", err)
}

// purgeNodesArgs binds the purge-nodes batch's parameter.
func purgeNodesArgs(cutoff time.Time) []any { return []any{sql.Named("cutoff", datetime2(cutoff))} }
