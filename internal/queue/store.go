package queue

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// Store is the durable task queue. Every method is safe for concurrent use by
// many goroutines and many processes sharing one database.
type Store interface {
	// Dialect names the SQL dialect: "sqlite", "postgres" or "sqlserver".
	Dialect() string
	// Migrate applies the embedded migrations. Applying them twice is a no-op; a
	// schema newer than this binary knows gives ErrSchemaTooNew.
	Migrate(ctx context.Context) error
	// SchemaVersion reports the applied migration version and the newest one this
	// binary embeds.
	SchemaVersion(ctx context.Context) (SchemaStatus, error)
	// Close releases the store's connections.
	Close() error

	// Enqueue writes all tasks in one transaction and returns their ids in order.
	// Invalid input gives a *ValidationError and writes nothing.
	Enqueue(ctx context.Context, tasks []NewTask) ([]int64, error)
	// Claim leases up to p.Limit claimable tasks of p.Queue in one round trip
	// (SPEC §4) and returns them running, with a fresh LeaseToken each.
	Claim(ctx context.Context, p ClaimParams) ([]*Task, error)
	// Heartbeat extends the leases still held and reports those lost and those
	// whose cancellation was requested.
	Heartbeat(ctx context.Context, leases []Lease, lease time.Duration) (HeartbeatResult, error)
	// SetSession records the target session (SPID, backend pid) of a running attempt.
	SetSession(ctx context.Context, l Lease, sessionID string) error
	// Finish records attempts that ended and moves their tasks on: succeeded,
	// back to pending with back-off (failed or timed_out with attempts left),
	// failed, or cancelled. Each attempt writes one execution-log row in the same
	// transaction. A result's Err is ErrLeaseLost when that lease was no longer
	// current; that attempt changed nothing.
	Finish(ctx context.Context, attempts []Attempt) ([]FinishResult, error)
	// Release gives running tasks back at once (node shutdown): the attempt is
	// logged with its outcome and the task is pending again without back-off.
	Release(ctx context.Context, attempts []Attempt) ([]FinishResult, error)
	// RunTransactional runs body on the store's own database and records the
	// attempt as succeeded in the same transaction, so its effect commits exactly
	// once. If the body fails (or the lease was lost) the transaction rolls back;
	// a failed body is then recorded as a failed attempt.
	RunTransactional(ctx context.Context, a Attempt, body string) (FinishResult, error)
	// ReclaimExpired takes back up to limit running tasks whose lease expired;
	// each counts as an attempt with outcome lost.
	ReclaimExpired(ctx context.Context, limit int) ([]FinishResult, error)
	// Cancel cancels a pending task at once, or asks the holder of a running
	// task to stop (CancelRequested); it returns the task's state afterwards.
	Cancel(ctx context.Context, id int64, actor string) (State, error)
	// Retry puts a failed or cancelled task back to pending now, with a fresh
	// attempt budget; chain stages cancelled because of it are reopened.
	Retry(ctx context.Context, id int64, actor string) error

	// TaskAttempts returns the execution-log rows of one task, oldest first.
	TaskAttempts(ctx context.Context, taskID int64) ([]AttemptRecord, error)
	// Get returns one task with Why filled in.
	Get(ctx context.Context, id int64) (*Task, error)
	// List returns tasks newest first, filtered, one keyset page at a time.
	List(ctx context.Context, p ListParams) ([]*Task, error)
	// Queues lists every known queue with its settings and counts per state.
	Queues(ctx context.Context) ([]Queue, error)
	// UpdateQueue changes a queue's settings, creating the queue if needed.
	UpdateQueue(ctx context.Context, name string, u QueueUpdate) (*Queue, error)
	// SetGroupLimit sets how many tasks of a group may run at once.
	SetGroupLimit(ctx context.Context, name string, maxRunning int, actor string) error
	// Groups lists the known concurrency groups.
	Groups(ctx context.Context) ([]Group, error)
}

// Options are the settings every dialect takes.
type Options struct {
	// MaxBodyBytes limits a task body; 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int
	// Logger receives the store's few log lines; nil discards them.
	Logger *slog.Logger
}

// SchemaStatus is what Store.SchemaVersion reports.
type SchemaStatus struct {
	Version uint // 0: nothing applied
	Dirty   bool
	Latest  uint // newest migration embedded in this binary
}

// ClaimParams says what to claim.
type ClaimParams struct {
	Queue         string
	Owner         string        // who holds the leases, e.g. "node-1/w3"
	Limit         int           // up to this many tasks (1–1000)
	LeaseDuration time.Duration // the lease runs out this long after the claim
}

// MaxClaimLimit bounds one claim.
const MaxClaimLimit = 1000

// HeartbeatResult is what Store.Heartbeat reports.
type HeartbeatResult struct {
	Lost            []int64 // leases no longer held: stop working on these
	CancelRequested []int64 // held, but an operator asked for cancellation
}

// Attempt is one finished execution of a task, as the worker saw it.
type Attempt struct {
	Lease
	Outcome      Outcome
	Error        string
	Node         string
	Worker       string
	SessionID    string
	StartedAt    time.Time
	FinishedAt   time.Time
	RowsAffected int64
	Messages     string
}

// FinishResult is what became of one task.
type FinishResult struct {
	TaskID int64
	State  State     // the task's state afterwards
	Retry  time.Time // when State is pending: the next available_at
	Err    error     // ErrLeaseLost: this attempt changed nothing
}

// ListParams filters Store.List. Empty fields do not filter.
type ListParams struct {
	State  State
	Queue  string
	Group  string
	Chain  string
	Before int64 // keyset cursor: only ids below this; 0 starts at the newest
	Limit  int   // 1–1000; 0 means 50
}

// QueueUpdate changes queue settings; nil fields are left as they are.
type QueueUpdate struct {
	Workers         *int
	MaxRunning      *int
	ClearMaxRunning bool // remove the cluster-wide limit
	Paused          *bool
	Actor           string
}

// AttemptRecord is one row of the execution log.
type AttemptRecord struct {
	ID           int64
	TaskID       int64
	Attempt      int
	Queue        string
	Node         string
	Worker       string
	SessionID    string
	StartedAt    time.Time
	FinishedAt   time.Time
	Duration     time.Duration
	Outcome      Outcome
	Error        string
	RowsAffected int64
	Messages     string
}

// Describe renders the change for the audit log, e.g. "workers=4 paused=true".
func (u QueueUpdate) Describe() string {
	var parts []string
	if u.Workers != nil {
		parts = append(parts, fmt.Sprintf("workers=%d", *u.Workers))
	}
	if u.MaxRunning != nil {
		parts = append(parts, fmt.Sprintf("max_running=%d", *u.MaxRunning))
	}
	if u.ClearMaxRunning {
		parts = append(parts, "max_running=none")
	}
	if u.Paused != nil {
		parts = append(parts, fmt.Sprintf("paused=%t", *u.Paused))
	}
	return strings.Join(parts, " ")
}
