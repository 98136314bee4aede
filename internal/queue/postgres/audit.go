package postgres

import (
	"context"

	"readpast/internal/queue"
)

// auditSQL reads one page of the audit log: $1 the id it starts below, $2 its
// size. A backward range scan of the primary key, whatever the log's length
// (TestAuditReadsThePrimaryKey).
const auditSQL = `SELECT id, at, actor, action, target, detail FROM readpast_audit
WHERE id < $1 ORDER BY id DESC LIMIT $2`

// Audit implements queue.AuditStore: a backward range scan of the primary
// key, newest first.
func (s *Store) Audit(ctx context.Context, q queue.AuditQuery) ([]queue.AuditRecord, error) {
	before, limit, err := q.Bounds()
	if err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, auditSQL, before, limit)
	if err != nil {
		return nil, wrap(err, "reading the audit log")
	}
	defer rows.Close()
	out := make([]queue.AuditRecord, 0, limit)
	for rows.Next() {
		var r queue.AuditRecord
		if err := rows.Scan(&r.ID, &r.At, &r.Actor, &r.Action, &r.Target, &r.Detail); err != nil {
			return nil, wrap(err, "reading the audit log")
		}
		r.At = r.At.UTC()
		out = append(out, r)
	}
	return out, wrap(rows.Err(), "reading the audit log")
}
