package queue

import (
	"context"
	"log/slog"
	"readpast/internal/dialect"
	"time"
)

// Store is the whole contract a SQL dialect fulfils: everything the product asks
// of a database, in named parts. Every method is safe for concurrent use by many
// goroutines and many processes sharing one database. The conformance suite
// (queuetest) exercises every method on every dialect; what a dialect cannot do
// is a capability (Capabilities), never a missing method.
//
// A dialect persists; it does not decide. Its store is reached through
// Checked (open.Store puts every store behind it), which refuses invalid
// input with a *ValidationError and fills in the defaults before the dialect
// is called, and schedules' rules are the schedule package's. So where a
// method below says invalid input is refused, Checked refuses it, and a
// dialect takes its arguments as given.
type Store interface {
	SchemaStore
	TaskStore
	QueueStore
	NodeStore
	LogStore
	ScheduleStore
	JobStore
	AuditStore
	AlertStore
	BulkStore
	ResultStore
	Listener
	Holder
}

// SchemaStore is the store's identity, schema and lifetime.
type SchemaStore interface {
	// Dialect names the SQL dialect of the store.
	Dialect() dialect.Dialect
	// Capabilities says what this store can do beyond the common contract.
	Capabilities() Capabilities
	// Migrate applies the embedded migrations. Applying them twice is a no-op; a
	// schema newer than this binary knows gives ErrSchemaTooNew.
	Migrate(ctx context.Context) error
	// MigrateDown reverts every migration, newest first: the store's tables
	// and whatever they held are gone. For uninstalling, and for selftest's
	// scratch database.
	MigrateDown(ctx context.Context) error
	// SchemaVersion reports the applied migration version and the newest one this
	// binary embeds.
	SchemaVersion(ctx context.Context) (SchemaStatus, error)
	// Close releases the store's connections.
	Close() error
}

// TaskStore is the task life cycle: enqueue, claim, lease upkeep, the end of
// an attempt, and the reads of one task.
type TaskStore interface {
	// Enqueue writes all tasks in one transaction and says, in input order,
	// what became of each: its new id, or, for a task whose unique key an
	// unfinished task of its queue already has, that task's id (Duplicate:
	// nothing was written for it). Invalid input gives a *ValidationError and
	// writes nothing.
	Enqueue(ctx context.Context, tasks []NewTask) ([]Enqueued, error)
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
	// RunTransactional runs body on the store's own database, in a session of
	// its own, and records the attempt a as succeeded in the same transaction,
	// so the body's effect and the completion commit exactly once together.
	// Between the body and the completion the session is restored to a fixed
	// state, and the transaction must be the one that was opened
	// (docs/WORKERS.md, "What a body may do to its session").
	//
	// When the body fails, is stopped (ctx ends), or leaves the session in a
	// state the completion cannot run in, everything rolls back and nothing is
	// recorded: the result's BodyErr says why, and the caller records the
	// attempt as it records any other (Finish or Release). When the lease was
	// lost the body is rolled back too and the error is ErrLeaseLost. Any other
	// error is the store's: whether the commit happened is then unknown, and
	// recording the attempt through Finish is safe either way (fencing).
	RunTransactional(ctx context.Context, a Attempt, body string) (TxResult, error)
	// ReclaimExpired takes back up to limit running tasks whose lease expired;
	// each counts as an attempt with outcome lost.
	ReclaimExpired(ctx context.Context, limit int) ([]FinishResult, error)
	// Cancel cancels a pending task at once, or asks the holder of a running
	// task to stop (CancelRequested); it returns the task's state afterwards.
	Cancel(ctx context.Context, id int64, actor string) (State, error)
	// Retry puts a failed or cancelled task back to pending now, with a fresh
	// attempt budget; chain stages cancelled because of it are reopened.
	Retry(ctx context.Context, id int64, actor string) error
	// Get returns one task with Why filled in.
	Get(ctx context.Context, id int64) (*Task, error)
	// List returns tasks newest first, filtered, one keyset page at a time.
	List(ctx context.Context, p ListParams) ([]*Task, error)
	// TaskAttempts returns the execution-log rows of one task, oldest first.
	TaskAttempts(ctx context.Context, taskID int64) ([]AttemptRecord, error)
}

// QueueStore is queue and group settings.
type QueueStore interface {
	// Queues lists every known queue with its settings and counts per state.
	Queues(ctx context.Context) ([]Queue, error)
	// QueueSettings lists every known queue's settings without counting tasks:
	// the cheap read every node's settings watcher makes each second.
	QueueSettings(ctx context.Context) ([]Queue, error)
	// UpdateQueue changes a queue's settings, creating the queue if needed.
	UpdateQueue(ctx context.Context, name string, u QueueUpdate) (*Queue, error)
	// SetGroupLimit sets how many tasks of a group may run at once.
	SetGroupLimit(ctx context.Context, name string, maxRunning int, actor string) error
	// Groups lists the known concurrency groups, each with its pending tasks
	// counted by the index of unfinished grouped tasks (not the history).
	Groups(ctx context.Context) ([]Group, error)
	// DeleteQueue removes a queue that has no unfinished (pending or running)
	// task, and audits it: its settings go, its finished tasks stay in the
	// history until retention, and an enqueue to the name later makes it
	// anew. ErrNotFound when there is no such queue, ErrInvalidState while it
	// has unfinished tasks. An enqueue to the queue racing the delete either
	// commits first (the delete is refused) or makes the queue again.
	DeleteQueue(ctx context.Context, name, actor string) error
}

// NodeStore registers nodes and reads them back for the dashboard.
type NodeStore interface {
	// RegisterNode inserts or replaces the node's row, started and heartbeating now.
	RegisterNode(ctx context.Context, n Node) error
	// HeartbeatNode marks the node alive now and stores its info JSON.
	HeartbeatNode(ctx context.Context, id, info string) error
	// StopNode marks the node stopped (graceful shutdown).
	StopNode(ctx context.Context, id string) error
	// Nodes lists nodes, newest heartbeat first; a node whose last heartbeat is
	// older than goneAfter (by the database clock) is Gone.
	Nodes(ctx context.Context, goneAfter time.Duration) ([]Node, error)
	// PurgeNodes deletes the rows of nodes whose last sign of life (their last
	// heartbeat, or their stop) is before cutoff, and returns how many it
	// deleted. Retention calls it with now less NodesGoneKept.
	PurgeNodes(ctx context.Context, cutoff time.Time) (int64, error)
}

// LogStore queries and trims the execution log and the finished tasks.
type LogStore interface {
	// Attempts returns log rows newest first, one keyset page at a time.
	Attempts(ctx context.Context, q LogQuery) ([]AttemptRecord, error)
	// PurgeAttempts deletes up to batch log rows that finished before cutoff and
	// returns how many it deleted; callers loop in small batches so that no long
	// transaction holds locks the claim path needs.
	PurgeAttempts(ctx context.Context, cutoff time.Time, batch int) (int64, error)
	// PurgeTasks deletes up to batch finished tasks that finished before cutoff;
	// the finished counts shrink with them.
	PurgeTasks(ctx context.Context, cutoff time.Time, batch int) (int64, error)
	// Throughput returns the attempts that finished from q.Since on, per
	// q.Span bucket, queue and outcome, from the throughput rollups: its cost
	// does not grow with the log.
	Throughput(ctx context.Context, q ThroughputQuery) ([]ThroughputPoint, error)
	// PurgeRollups deletes throughput buckets older than their span keeps
	// them at now (minutes: RollupMinutesKept, hours: RollupHoursKept).
	PurgeRollups(ctx context.Context, now time.Time) (int64, error)
}

// ScheduleStore keeps schedules (docs/SCHEDULES.md) and makes their fires:
// each fire time of a schedule creates at most one task, cluster-wide, however
// many schedulers race for it. A store persists; it does not decide: the
// definitions, next fire times and actors it is given were checked by the
// schedule package (schedule.Editor checks an operator's change,
// schedule.Plan a fire), so a dialect writes only SQL. Every operator's
// change is audited in the transaction that makes it.
type ScheduleStore interface {
	// CreateSchedule writes a new schedule as given, with its audit row. A
	// taken name gives ErrExists.
	CreateSchedule(ctx context.Context, s NewSchedule) error
	// GetSchedule returns one schedule with its latest run; ErrNotFound if none.
	GetSchedule(ctx context.Context, name string) (*Schedule, error)
	// Schedules lists every schedule by name, each with its latest run.
	Schedules(ctx context.Context) ([]Schedule, error)
	// ReplaceSchedule writes r's definition and next fire time over the
	// schedule's, with its audit row, only while the schedule is still at
	// r.Version; it reports whether it wrote.
	ReplaceSchedule(ctx context.Context, r ScheduleReplace) (bool, error)
	// DeleteSchedule removes a schedule, audited as actor's; its tasks stay.
	// ErrNotFound if none.
	DeleteSchedule(ctx context.Context, name, actor string) error
	// RunSchedule enqueues a run of the schedule now, as actor's, outside its
	// fire times and whether paused or not. With OverlapSkip while the latest
	// run is unfinished it creates nothing and returns that run (Duplicate).
	// fan is the fan-out the caller resolved for a schedule with targets
	// (nil for one without): refused when the schedule's targets changed.
	RunSchedule(ctx context.Context, name, actor string, fan *FanOutFire) (Enqueued, error)
	// DueSchedules returns up to limit schedules due at at (zero: now by the
	// database's clock), soonest first, without locking anything.
	DueSchedules(ctx context.Context, at time.Time, limit int) (DueSchedules, error)
	// FireSchedule makes the fire f planned, in one transaction, only if the
	// schedule is still at f.Version: it moves the schedule to f.Next and
	// creates the fire's task, unless f skips the missed fire times or the
	// overlap policy skips it. A firer never waits for another: a schedule
	// another transaction holds is left to it (Won false).
	FireSchedule(ctx context.Context, f ScheduleFire) (Fired, error)
}

// Listener delivers other nodes' enqueues where the database can push them
// (PostgreSQL LISTEN/NOTIFY); elsewhere nodes poll. Capabilities().Listen says
// which.
type Listener interface {
	// Listen blocks until ctx ends, calling fn with the queue name of each
	// enqueue made by any node; it reconnects by itself and returns nil when ctx
	// ends. Without Capabilities().Listen it returns ErrNotSupported at once.
	Listen(ctx context.Context, fn func(queue string)) error
}

// Holder runs one store operation's own statements inside a transaction that
// it keeps open, so that the locks the operation takes stay held. It is how
// `readpast selftest` and the conformance suite prove from outside that
// claimers never wait on each other (SPEC §4.2): the production statements,
// not a copy, hold real locks while a second claimer runs.
type Holder interface {
	// Hold runs op and keeps its transaction open until Release; Release rolls
	// it back, so nothing op did is kept. With Capabilities().ConcurrentWriters
	// false, holding a write blocks every other writer of the store.
	Hold(ctx context.Context, op HoldOp) (Held, error)
}

// Capabilities are what a store can do beyond the common contract; the
// conformance suite and selftest check them instead of dialect names.
type Capabilities struct {
	// Listen: Listen delivers enqueues of other nodes (PostgreSQL LISTEN/NOTIFY).
	Listen bool
	// ConcurrentWriters: write transactions run side by side, claimers skipping
	// each other's locked rows (SKIP LOCKED, READPAST). False for SQLite, whose
	// one writer runs write transactions one at a time.
	ConcurrentWriters bool
	// FinishBatch: the most attempts one Finish call should carry; 0 means
	// the node's default (500). PostgreSQL ends a whole batch in one
	// statement, and a drain of short tasks costs its server less per task
	// in fewer, larger batches; SQLite's one writer should not be held much
	// longer than 500 take; SQL Server ends each attempt in its own
	// transaction, so a call must stay small enough to end within the node's
	// store timeout (docs/benchmarks/river.md, "Larger claims and finishes").
	FinishBatch int
}

// Options are the settings every dialect takes.
type Options struct {
	// MaxBodyBytes limits a task body; 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int
	// Logger receives the store's few log lines; nil discards them.
	Logger *slog.Logger
	// DeadSessionBound bounds how long the database keeps the session of a
	// node that stopped answering (frozen, cut off, dead) while it held a
	// transaction open: at most this long, the lease (serve sets it), so the
	// server ends it before another node could need what it holds. 0 means
	// DefaultDeadSessionBound. PostgreSQL: idle_in_transaction_session_timeout
	// and TCP keepalives on every store session; SQL Server has no
	// idle-in-transaction timeout (docs/RELIABILITY.md).
	DeadSessionBound time.Duration
	// Node names the node in the application name of the store's sessions
	// ("ReadPast store <node>", appname.For); "" leaves it out. A DSN that
	// names its sessions itself keeps its name.
	Node string
}

// DefaultDeadSessionBound is Options.DeadSessionBound when unset: the default
// lease.
const DefaultDeadSessionBound = 30 * time.Second

// SchemaStatus is what Store.SchemaVersion reports.
type SchemaStatus struct {
	Version uint // 0: nothing applied
	Dirty   bool
	Latest  uint // newest migration embedded in this binary
}
