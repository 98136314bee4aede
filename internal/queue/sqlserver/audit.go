package sqlserver

import (
	"context"
	"database/sql"

	"readpast/internal/queue"
)

// auditQuery reads one page of the audit log, newest first: a backward seek
// on the clustered primary key.
var auditQuery = query{
	name: "audit",
	text: readCommitted + `SELECT TOP (@limit) a.id, a.at, a.actor, a.action, a.target, a.detail
FROM dbo.readpast_audit AS a
WHERE a.id < @before
ORDER BY a.id DESC;
`,
	params: []string{"limit", "before"},
}

// auditArgs binds the audit query's parameters.
func auditArgs(before int64, limit int) []any {
	return []any{sql.Named("limit", limit), sql.Named("before", before)}
}

// Audit implements queue.AuditStore.
func (s *Store) Audit(ctx context.Context, q queue.AuditQuery) ([]queue.AuditRecord, error) {
	before, limit, err := q.Bounds()
	if err != nil {
		return nil, err
	}
	out, err := queryAll(ctx, s.db, auditQuery.text, auditArgs(before, limit), func(r *sql.Rows) (queue.AuditRecord, error) {
		var a queue.AuditRecord
		err := r.Scan(&a.ID, &a.At, &a.Actor, &a.Action, &a.Target, &a.Detail)
		a.At = a.At.UTC()
		return a, err
	})
	if err != nil {
		return nil, wrap("reading the audit log", err)
	}
	return out, nil
}
