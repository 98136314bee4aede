package queue

import (
	"fmt"
	"strings"
	"time"
)

// Enqueued is what became of one task given to Store.Enqueue.
type Enqueued struct {
	ID int64
	// Duplicate: an unfinished (pending or running) task of the same queue
	// has the task's unique key; ID is that task's and nothing was written.
	Duplicate bool
}

// IDs returns the ids of enqueue results, in order.
func IDs(res []Enqueued) []int64 {
	ids := make([]int64, len(res))
	for i, r := range res {
		ids[i] = r.ID
	}
	return ids
}

// ClaimParams says what to claim.
type ClaimParams struct {
	Queue         string
	Owner         string        // who holds the leases, e.g. "node-1/default"
	Limit         int           // up to this many tasks (1–1000)
	LeaseDuration time.Duration // the lease runs out this long after the claim
	// Targets, when not nil, are the only targets whose tasks are claimed
	// ("" among them: the tasks that name none); nil claims any target's.
	Targets []string
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
	// Results is the result output the attempt kept, encoded
	// (resultset.Output.Encode); "" when its queue keeps none.
	Results string
	// Uncounted: a fault of the database, or of the node's reach of it,
	// stopped the attempt, not its body (the session was lost, the server
	// restarted, the node could not renew its lease). Release gives such an
	// attempt back to the task's budget (retry_base + 1, as an operator's
	// retry resets it), so max_attempts counts the body's own tries; Finish
	// ignores it.
	Uncounted bool
}

// FinishResult is what became of one task.
type FinishResult struct {
	TaskID int64
	State  State     // the task's state afterwards
	Retry  time.Time // when State is pending: the next available_at
	Err    error     // ErrLeaseLost: this attempt changed nothing
}

// TxResult is what Store.RunTransactional did.
type TxResult struct {
	// Committed: the body's work committed. Recorded: the attempt's end
	// committed with it (SQLite), and Finish says what became of the task.
	// Committed without Recorded (PostgreSQL, SQL Server): the body's
	// transaction marked the task's own row as committed under its lease and
	// held no other row, so a node that stalls before its COMMIT blocks no
	// other task's end; the task is still running, and the caller records the
	// attempt as succeeded with an ordinary Finish. Whatever ends that attempt
	// instead (a release, the reclaim of its expired lease) records it as
	// succeeded too, so a committed body never runs again.
	Committed bool
	Recorded  bool
	Finish    FinishResult
	// What the body reported, as far as it got: the session it ran in, the
	// rows its statements affected, its messages (PRINT, RAISERROR, NOTICE).
	SessionID    string
	RowsAffected int64
	Messages     string
	// Results is the result output the body kept when its context asked
	// (resultset.WithRows), encoded; "" otherwise. Recorded with the
	// attempt: by the store when Recorded, else by the caller's Finish.
	Results string
	// BodyErr is why the body's work was rolled back without a record: its
	// own error, its context's end, or what it did to its session.
	BodyErr error
}

// ListParams filters Store.List. Empty fields do not filter.
type ListParams struct {
	State State
	Queue string
	Group string
	Chain string
	// Schedule: only tasks created by this schedule.
	Schedule string
	// Text: only tasks whose body contains it (queue.BulkStore's Search and
	// CountTasks read it; List refuses it).
	Text   string
	Before int64 // keyset cursor: only ids below this; 0 starts at the newest
	Limit  int   // 1–1000; 0 means 50
}

// EveryStateOfGroupOrSchedule reports whether p asks for a group's or a
// schedule's tasks of every state (no chain): their list indexes hold one
// range per state (migrations/*/000001_baseline), so every store pages them by merging
// the newest rows of each range.
func (p ListParams) EveryStateOfGroupOrSchedule() bool {
	return (p.Group != "" || p.Schedule != "") && p.State == "" && p.Chain == ""
}

// QueueUpdate changes queue settings; nil fields are left as they are.
type QueueUpdate struct {
	Workers         *int
	MaxRunning      *int
	ClearMaxRunning bool // remove the cluster-wide limit
	Paused          *bool
	DefaultTarget   *string // "" clears it
	// Retry sets the queue's wait before a retry of its tasks (RetryPolicy);
	// ClearRetry goes back to Backoff.
	Retry      *RetryPolicy
	ClearRetry bool
	// ResultRows sets how many result rows an attempt keeps (0: none).
	ResultRows *int
	Actor      string
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
	if u.DefaultTarget != nil {
		parts = append(parts, fmt.Sprintf("default_target=%q", *u.DefaultTarget))
	}
	if u.Retry != nil {
		parts = append(parts, fmt.Sprintf("retry=%q", u.Retry.Describe()))
	}
	if u.ClearRetry {
		parts = append(parts, "retry=backoff")
	}
	if u.ResultRows != nil {
		parts = append(parts, fmt.Sprintf("result_rows=%d", *u.ResultRows))
	}
	return strings.Join(parts, " ")
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

// LogQuery filters the execution log. Empty fields do not filter.
type LogQuery struct {
	TaskID  int64
	Queue   string
	Outcome Outcome
	Since   time.Time // finished at or after
	Until   time.Time // finished before
	Before  int64     // keyset cursor: only rows with id below this; 0 starts at the newest
	Limit   int       // 1–10000; 0 means 100
}

// MaxPurgeBatch bounds one purge call: a purge deletes in short transactions
// that never hold many locks, so the claim path never waits long behind one
// (and on SQL Server no purge escalates to a table lock).
const MaxPurgeBatch = 2000

// CheckPurge validates a purge's batch size.
func CheckPurge(batch int) error {
	if batch < 1 || batch > MaxPurgeBatch {
		return &ValidationError{Field: "batch", Reason: fmt.Sprintf("is %d: use 1 to %d", batch, MaxPurgeBatch)}
	}
	return nil
}

// CheckLogQuery validates a log query and returns the effective limit.
func CheckLogQuery(q LogQuery) (int, error) {
	if q.Outcome != "" && !q.Outcome.Valid() {
		return 0, &ValidationError{Field: "outcome", Reason: "is not one of succeeded, failed, timed_out, cancelled, lost"}
	}
	if q.Queue != "" {
		if err := CheckQueueName("queue", q.Queue); err != nil {
			return 0, err
		}
	}
	switch {
	case q.Limit == 0:
		return 100, nil
	case q.Limit < 0 || q.Limit > 10000:
		return 0, &ValidationError{Field: "limit", Reason: "use 1 to 10000"}
	}
	return q.Limit, nil
}

// Span is the width of a throughput bucket.
type Span string

// The throughput rollups' spans.
const (
	SpanMinute Span = "minute"
	SpanHour   Span = "hour"
)

// How long the throughput rollups keep their buckets: a day of minutes for the
// hour and day charts, a week of hours for the week chart, with a margin.
const (
	RollupMinutesKept = 48 * time.Hour
	RollupHoursKept   = 8 * 24 * time.Hour
)

// NodesGoneKept is how long a node that stopped or went silent stays listed
// (the dashboard shows it gone) before retention deletes its row: a week, so
// a crash is still there to see after a weekend, and the list does not grow
// with every restart of a node whose id is host-pid.
const NodesGoneKept = 7 * 24 * time.Hour

// ThroughputQuery asks for the throughput buckets of one span from Since on.
type ThroughputQuery struct {
	Span  Span
	Since time.Time
}

// ThroughputPoint is one bucket of one queue and outcome.
type ThroughputPoint struct {
	At      time.Time // the bucket's start
	Queue   string
	Outcome Outcome
	N       int64
	Busy    time.Duration // the attempts' running time, summed
}

// CheckThroughput validates a throughput query.
func CheckThroughput(q ThroughputQuery) error {
	keep := map[Span]time.Duration{SpanMinute: RollupMinutesKept, SpanHour: RollupHoursKept}[q.Span]
	switch {
	case keep == 0:
		return &ValidationError{Field: "span", Reason: fmt.Sprintf("%q is not one of minute, hour", q.Span)}
	case q.Since.IsZero():
		return &ValidationError{Field: "since", Reason: "is missing: say from when"}
	}
	return nil
}

// Node is one ReadPast process registered in the store.
type Node struct {
	ID          string
	Hostname    string
	PID         int
	Version     string
	StartedAt   time.Time
	HeartbeatAt time.Time
	StoppedAt   time.Time // zero while it runs
	Info        string    // JSON: the node's pools and what each worker runs
	Gone        bool      // stopped, or silent for longer than the gone-after threshold
}
