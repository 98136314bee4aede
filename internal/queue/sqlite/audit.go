package sqlite

import (
	"context"
	"fmt"

	"readpast/internal/queue"
)

// Audit implements queue.AuditStore: a range of the rowid, newest first.
func (s *Store) Audit(ctx context.Context, q queue.AuditQuery) ([]queue.AuditRecord, error) {
	before, limit, err := q.Bounds()
	if err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT id, at, actor, action, target, detail FROM readpast_audit
		WHERE id < ? ORDER BY id DESC LIMIT ?`, before, limit)
	if err != nil {
		return nil, fmt.Errorf("reading the audit log: %w", err)
	}
	defer rows.Close()
	out := make([]queue.AuditRecord, 0, limit)
	for rows.Next() {
		var r queue.AuditRecord
		var at int64
		if err := rows.Scan(&r.ID, &at, &r.Actor, &r.Action, &r.Target, &r.Detail); err != nil {
			return nil, fmt.Errorf("reading the audit log: %w", err)
		}
		r.At = fromMicros(at)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the audit log: %w", err)
	}
	return out, nil
}
