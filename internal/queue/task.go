package queue

import "time"

// State is where a task is in its life cycle.
type State string

// The task states of SPEC §3. A delayed, retrying or waiting task is pending.
const (
	StatePending   State = "pending"
	StateRunning   State = "running"
	StateSucceeded State = "succeeded"
	StateFailed    State = "failed"
	StateCancelled State = "cancelled"
)

// States lists every state in display order.
var States = []State{StatePending, StateRunning, StateSucceeded, StateFailed, StateCancelled}

// Valid reports whether s is one of the known states.
func (s State) Valid() bool {
	for _, k := range States {
		if s == k {
			return true
		}
	}
	return false
}

// Finished reports whether s is a final state.
func (s State) Finished() bool {
	return s == StateSucceeded || s == StateFailed || s == StateCancelled
}

// Outcome is how one attempt ended; it is what the execution log records.
type Outcome string

// The attempt outcomes of SPEC §6.
const (
	OutcomeSucceeded Outcome = "succeeded"
	OutcomeFailed    Outcome = "failed"
	OutcomeTimedOut  Outcome = "timed_out"
	OutcomeCancelled Outcome = "cancelled"
	OutcomeLost      Outcome = "lost"
)

// Outcomes lists every outcome.
var Outcomes = []Outcome{OutcomeSucceeded, OutcomeFailed, OutcomeTimedOut, OutcomeCancelled, OutcomeLost}

// Valid reports whether o is one of the known outcomes.
func (o Outcome) Valid() bool {
	for _, k := range Outcomes {
		if o == k {
			return true
		}
	}
	return false
}

// Task is one stored task with its bookkeeping.
type Task struct {
	ID                int64
	Queue             string
	Body              string
	Priority          int
	AvailableAt       time.Time
	Group             string // "" when the task has no concurrency group
	Chain             string // "" when the task is not part of a chain
	Stage             int
	ChainWait         bool // an earlier stage of its chain is unfinished
	ContinueOnFailure bool
	MaxAttempts       int
	Timeout           time.Duration // 0: no limit
	Transactional     bool
	State             State
	Attempts          int
	LeaseOwner        string
	LeaseToken        int64
	LeaseExpiresAt    time.Time // zero unless running
	SessionID         string    // target session (SPID / backend pid) of the running attempt
	CancelRequested   bool
	CreatedAt         time.Time
	CreatedBy         string
	StartedAt         time.Time // start of the latest attempt; zero before the first
	FinishedAt        time.Time // zero until the task is finished
	LastError         string
	UniqueKey         string // "" when the task has none
	Name              string // "" when the task has none
	// Schedule is the schedule that created the task ("" when none), and
	// FireAt the fire time it is the run of (zero for a Run now).
	Schedule string
	FireAt   time.Time
	// Target is the target the body runs on ("": its queue's default, else
	// the node's default; docs/TARGETS.md).
	Target string

	// Why says, for a pending task that cannot be claimed now, what it waits for.
	// Only Store.Get fills it.
	Why string
}

// Lease identifies one claim of a task: only its holder may finish the task.
func (t *Task) Lease() Lease { return Lease{TaskID: t.ID, Token: t.LeaseToken} }

// Lease is a task id and the fencing token handed out when it was claimed.
type Lease struct {
	TaskID int64
	Token  int64
}

// Queue is a queue's settings and its task counts.
type Queue struct {
	Name       string
	Workers    *int // per node; nil: the node's default
	MaxRunning *int // cluster-wide; nil: no limit
	Paused     bool
	// DefaultTarget is where the queue's tasks that name no target run (""
	// : the node's default target).
	DefaultTarget string
	Retry         *RetryPolicy // nil: Backoff
	// ResultRows is how many rows of its result sets an attempt of the
	// queue keeps (0: none; resultset.MaxRows at most).
	ResultRows int
	UpdatedAt  time.Time
	UpdatedBy  string
	Counts     map[State]int64
}

// Group is a concurrency group and how many of its tasks run now.
type Group struct {
	Name       string
	MaxRunning int
	Running    int
	Pending    int64 // tasks of the group waiting to run (delayed and chained ones too)
	UpdatedAt  time.Time
	UpdatedBy  string
}
