package queue

import (
	"context"
	"fmt"
	"time"
)

// AlertStore is the alerts' outbox (docs/ALERTS.md). The store writes facts
// and keeps deliveries; the alerts package in each node decides what a fact
// means (rules, operators, digests) and sends. Events are written by the
// transactions that make them (a task that failed for good: Finish and
// ReclaimExpired), so an alert is never lost nor raised for something that
// rolled back; events and deliveries are claimed with a lease, as tasks are,
// so exactly one node handles each at a time and another takes over when it
// dies.
type AlertStore interface {
	// ClaimAlertEvents leases up to limit events no node holds (or whose
	// lease ran out), oldest first, to node for lease.
	ClaimAlertEvents(ctx context.Context, node string, limit int, lease time.Duration) ([]AlertEvent, error)
	// WriteAlerts makes w in one transaction: it deletes w.Events (only
	// while w.Node still holds them: ErrLeaseLost otherwise, and nothing is
	// written), sets or clears w.Condition (when that changes nothing it
	// writes nothing and reports false), adds w.Deliveries (each merged into
	// a still unsent delivery of its Key, else a new one: under Key, or
	// LateKey when Key's delivery has started; Once: only if Key is new) and
	// audits w.Actor's action.
	WriteAlerts(ctx context.Context, w AlertWrite) (bool, error)
	// ClaimAlertDeliveries leases up to limit pending deliveries that are
	// due (by the database's clock), soonest first, to node for lease, and
	// counts an attempt of each.
	ClaimAlertDeliveries(ctx context.Context, node string, limit int, lease time.Duration) ([]AlertDelivery, error)
	// EndAlertDelivery records how an attempt of a claimed delivery ended (a
	// failed attempt's error stays the last error after a later success):
	// sent, given up, or pending again at e.RetryAt. ErrLeaseLost when the
	// attempt is not the delivery's current one (another node took it).
	EndAlertDelivery(ctx context.Context, e AlertDeliveryEnd) error
	// AlertDeliveries returns deliveries newest first, one keyset page at a
	// time (as Audit).
	AlertDeliveries(ctx context.Context, q AlertDeliveryQuery) ([]AlertDelivery, error)
	// AlertConditions lists the conditions firing now.
	AlertConditions(ctx context.Context) ([]AlertCondition, error)
	// OldestPending returns, for each queue that is not paused, its oldest
	// pending task by enqueue order (one index seek per queue, whatever
	// the backlog), with the database's now: what the stuck-queue rule
	// reads.
	OldestPending(ctx context.Context) ([]QueueWait, error)
	// PurgeAlerts deletes up to batch ended deliveries that ended before
	// cutoff and up to batch events written before it that no node took
	// (a cluster without alerts configured), and returns how many.
	PurgeAlerts(ctx context.Context, cutoff time.Time, batch int) (int64, error)
}

// QueueWait is a queue's oldest pending task (OldestPending).
type QueueWait struct {
	Queue       string
	TaskID      int64
	AvailableAt time.Time // UTC
	Now         time.Time // the database's clock when read
}

// AlertEventTaskFailed is the kind of event of a task that ended failed
// (failed, timed out or lost on its last attempt).
const AlertEventTaskFailed = "task_failed"

// AlertEvent is a fact an alert may be raised for.
type AlertEvent struct {
	ID       int64
	At       time.Time // UTC, by the database's clock
	Kind     string    // AlertEventTaskFailed
	TaskID   int64
	Queue    string
	Schedule string  // "" unless a schedule made the task
	Target   string  // the task's target ("": its queue's default)
	Job      string  // "" unless the task is a job's step
	Outcome  Outcome // of the last attempt: failed, timed_out or lost
	Attempts int
	Error    string // the last attempt's error text
}

// AlertWrite is one transaction of the alerts package (WriteAlerts).
type AlertWrite struct {
	Node       string  // the holder of Events
	Events     []int64 // consumed by this write
	Condition  *AlertConditionChange
	Deliveries []NewAlertDelivery
	// Actor, when set, is audited as Action on AuditTarget (a test sent
	// from the Alerts page).
	Actor, Action, AuditTarget, AuditDetail string
}

// AlertConditionChange sets (Firing) or clears a condition.
type AlertConditionChange struct {
	Key    string
	Firing bool
	Detail string
}

// AlertCondition is a condition firing now: a time-based rule's subject.
type AlertCondition struct {
	Key    string
	Since  time.Time
	Detail string
}

// NewAlertDelivery is a delivery to add, or to merge into an unsent one.
type NewAlertDelivery struct {
	Key                           string // the alert id the receiver dedupes by
	LateKey                       string // the key when Key's delivery has started already
	Once                          bool   // add only when Key is new; never merge
	Rule, Operator, Channel, Kind string
	Scope                         string // what a digest counts in ("queue etl")
	Subject                       string // the first event, in one line
	Detail                        string // the first event's error
	Count                         int
	DueAt                         time.Time // zero: now
}

// Delivery states.
const (
	AlertPending = "pending"
	AlertSent    = "sent"
	AlertFailed  = "failed" // given up
)

// AlertDelivery is one message to one channel of one operator.
type AlertDelivery struct {
	ID                            int64
	Key                           string
	Rule, Operator, Channel, Kind string
	Scope, Subject, Detail        string
	Count                         int
	CreatedAt                     time.Time
	State                         string
	NextAt                        time.Time // pending: due, or when the lease of its attempt ends
	Attempts                      int
	ClaimedBy                     string
	LastError                     string
	EndedAt                       time.Time // zero while pending
}

// AlertDeliveryEnd is how an attempt of a delivery ended.
type AlertDeliveryEnd struct {
	ID      int64
	Node    string
	Attempt int // the delivery's Attempts as claimed
	Sent    bool
	GiveUp  bool
	Error   string
	RetryAt time.Time
}

// AlertDeliveryQuery is one page of deliveries.
type AlertDeliveryQuery struct {
	Before int64  // keyset cursor: rows with id below; 0: the newest
	State  string // "" for all
	Limit  int    // 1 to MaxAuditPage; 0 means DefaultAuditPage
}

// CheckAlertDeliveryQuery validates a page request and returns the id the
// page starts below and its limit.
func CheckAlertDeliveryQuery(q AlertDeliveryQuery) (before int64, limit int, err error) {
	switch q.State {
	case "", AlertPending, AlertSent, AlertFailed:
	default:
		return 0, 0, &ValidationError{Field: "state", Reason: fmt.Sprintf("%q is not one of pending, sent, failed", q.State)}
	}
	return AuditQuery{Before: q.Before, Limit: q.Limit}.Bounds()
}

// CheckAlertWrite validates a write: keys fit the stores' columns.
func CheckAlertWrite(w AlertWrite) error {
	if len(w.Events) > 0 && w.Node == "" {
		return &ValidationError{Field: "node", Reason: "is empty: name the node that holds the events"}
	}
	for _, d := range w.Deliveries {
		if d.Key == "" || len(d.Key) > MaxAlertKey || len(d.LateKey) > MaxAlertKey {
			return &ValidationError{Field: "key", Reason: fmt.Sprintf("must be 1 to %d bytes", MaxAlertKey)}
		}
		if d.Count < 1 {
			return &ValidationError{Field: "count", Reason: fmt.Sprintf("is %d: a delivery stands for at least one event", d.Count)}
		}
	}
	if c := w.Condition; c != nil && (c.Key == "" || len(c.Key) > MaxAlertKey) {
		return &ValidationError{Field: "condition", Reason: fmt.Sprintf("key must be 1 to %d bytes", MaxAlertKey)}
	}
	return nil
}

// MaxAlertKey is the longest alert or condition key (an indexed column on
// SQL Server).
const MaxAlertKey = 200

func checkAlertClaim(node string, limit int, lease time.Duration) error {
	switch {
	case node == "":
		return &ValidationError{Field: "node", Reason: "is empty"}
	case limit < 1 || limit > MaxClaimLimit:
		return &ValidationError{Field: "limit", Reason: fmt.Sprintf("is %d: claim 1 to %d", limit, MaxClaimLimit)}
	case lease < time.Millisecond:
		return &ValidationError{Field: "lease_duration", Reason: fmt.Sprintf("is %s: a lease must last at least 1ms", lease)}
	}
	return nil
}

func (c checked) ClaimAlertEvents(ctx context.Context, node string, limit int, lease time.Duration) ([]AlertEvent, error) {
	if err := checkAlertClaim(node, limit, lease); err != nil {
		return nil, err
	}
	return c.Store.ClaimAlertEvents(ctx, node, limit, lease)
}

func (c checked) ClaimAlertDeliveries(ctx context.Context, node string, limit int, lease time.Duration) ([]AlertDelivery, error) {
	if err := checkAlertClaim(node, limit, lease); err != nil {
		return nil, err
	}
	return c.Store.ClaimAlertDeliveries(ctx, node, limit, lease)
}

func (c checked) WriteAlerts(ctx context.Context, w AlertWrite) (bool, error) {
	if err := CheckAlertWrite(w); err != nil {
		return false, err
	}
	return c.Store.WriteAlerts(ctx, w)
}

func (c checked) AlertDeliveries(ctx context.Context, q AlertDeliveryQuery) ([]AlertDelivery, error) {
	if _, _, err := CheckAlertDeliveryQuery(q); err != nil {
		return nil, err
	}
	return c.Store.AlertDeliveries(ctx, q)
}

func (c checked) EndAlertDelivery(ctx context.Context, e AlertDeliveryEnd) error {
	if e.Node == "" {
		return &ValidationError{Field: "node", Reason: "is empty"}
	}
	return c.Store.EndAlertDelivery(ctx, e)
}

func (c checked) PurgeAlerts(ctx context.Context, cutoff time.Time, batch int) (int64, error) {
	if batch < 1 {
		batch = 1000
	}
	return c.Store.PurgeAlerts(ctx, cutoff, batch)
}
