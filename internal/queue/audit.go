package queue

import (
	"context"
	"fmt"
	"time"
)

// AuditStore reads the audit log: one row for every change an operator made
// (enqueue aside), written in the transaction of the change itself.
type AuditStore interface {
	// Audit returns audit rows newest first, one keyset page at a time: the
	// rows with an id below q.Before (all when 0), at most q.Limit of them. It
	// reads by the primary key, so a page costs the same whatever the log's
	// length.
	Audit(ctx context.Context, q AuditQuery) ([]AuditRecord, error)
}

// AuditQuery is one page of the audit log.
type AuditQuery struct {
	Before int64 // keyset cursor: only rows with id below this; 0 starts at the newest
	Limit  int   // 1 to MaxAuditPage; 0 means DefaultAuditPage
}

// Audit page sizes.
const (
	DefaultAuditPage = 100
	MaxAuditPage     = 1000
)

// AuditRecord is one audited change: who did what to which object, when.
type AuditRecord struct {
	ID     int64
	At     time.Time // UTC
	Actor  string    // who: operator:alice, local, scheduler…
	Action string    // what: cancel, retry, update_queue, set_group_limit, create_schedule…
	Target string    // the object: "task 42", "queue etl", "group nightly", "schedule s"
	Detail string    // what changed, when the action says more than its name
}

// CheckAuditQuery validates a page request and returns the effective limit.
func CheckAuditQuery(q AuditQuery) (int, error) {
	switch {
	case q.Before < 0:
		return 0, &ValidationError{Field: "cursor", Reason: fmt.Sprintf("is %d: give the next_cursor of a page", q.Before)}
	case q.Limit == 0:
		return DefaultAuditPage, nil
	case q.Limit < 0 || q.Limit > MaxAuditPage:
		return 0, &ValidationError{Field: "limit", Reason: fmt.Sprintf("is %d: use 1 to %d", q.Limit, MaxAuditPage)}
	}
	return q.Limit, nil
}

// auditBefore is the id a page starts below: q.Before, or past any id.
func (q AuditQuery) auditBefore() int64 {
	if q.Before == 0 {
		return 1<<63 - 1
	}
	return q.Before
}

// Bounds returns the id the page starts below and its row limit, after
// CheckAuditQuery: what every dialect's query binds.
func (q AuditQuery) Bounds() (before int64, limit int, err error) {
	limit, err = CheckAuditQuery(q)
	return q.auditBefore(), limit, err
}
