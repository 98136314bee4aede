package queue

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Jobs (docs/JOBS.md): a job is SQL Server Agent's job, a series of steps with
// an action on success and on failure; a run follows that flow, one step task
// at a time. The jobs package checks a definition and compiles its flow into
// plan steps; a store persists the plan and, in the transaction that records
// the end of a run's step task, follows the plan to the next step (StepNext)
// or ends the run. So a node that dies between two steps can neither skip nor
// double the next one.

// Step actions compiled into plan indexes: an index of the plan (0 or more),
// or one of these.
const (
	StepQuitSuccess = -1 // end the run: succeeded
	StepQuitFailure = -2 // end the run: failed
)

// MaxStepExecutions bounds the step tasks one run executes: go-to actions may
// loop (Agent allows it), and a run that reaches the bound ends failed.
const MaxStepExecutions = 1000

// RunState is the state of a job run.
type RunState string

// The run states.
const (
	RunRunning   RunState = "running"
	RunSucceeded RunState = "succeeded"
	RunFailed    RunState = "failed"
	RunCancelled RunState = "cancelled"
)

// The triggers of a run.
const (
	TriggerRunNow   = "run_now"   // an operator's Run now
	TriggerFromStep = "from_step" // an operator's Run from step N
	TriggerSchedule = "schedule"  // a schedule's fire time
)

// PlanStep is one step of a compiled job: what its task runs and where the
// flow goes after it. OnSuccess and OnFailure are plan indexes or
// StepQuitSuccess / StepQuitFailure.
type PlanStep struct {
	Name          string
	Body          string
	Target        string // a named target; "" the node's default
	Timeout       time.Duration
	Transactional bool
	MaxAttempts   int           // retry attempts + 1
	RetryInterval time.Duration // 0: the queue's back-off
	OnSuccess     int
	OnFailure     int
	// Targets, when set, makes the step fan out (docs/JOBS.md, "A step
	// that fans out"): in a job's plan its selectors (names and tag:NAME),
	// in a run's plan the target names they resolved to when the run
	// started. FanOutLimit is how many of them run at once (0: all).
	Targets     []string
	FanOutLimit int
}

// NewJob is a job as the store writes it: checked and compiled by the jobs
// package. Definition is the job's definition as an operator gave it (the
// API's JSON), kept to be read back; Steps is its compiled plan.
type NewJob struct {
	Name        string
	Description string
	Category    string
	Owner       string
	Enabled     bool
	Queue       string
	Overlap     Overlap // OverlapSkip: Run now and fires start nothing while a run is unfinished
	Definition  string
	Steps       []PlanStep
	Actor       string
}

// Job is a stored job with its latest run.
type Job struct {
	NewJob
	ID        int64
	Version   int64
	CreatedAt time.Time
	UpdatedAt time.Time
	LastRun   *Run // nil before the first run; without Steps
}

// Run is one run of a job.
type Run struct {
	ID            int64
	Job           string
	State         RunState
	Trigger       string
	StartStep     int
	CreatedBy     string
	StartedAt     time.Time
	FinishedAt    time.Time // zero while running
	StepsRun      int
	CurrentStep   int
	CurrentTaskID int64
	Reason        string // why it ended as it did
	Steps         []RunStep
}

// Duration is how long the run took, or has been running at now.
func (r Run) Duration(now time.Time) time.Duration {
	if r.FinishedAt.IsZero() {
		return now.Sub(r.StartedAt)
	}
	return r.FinishedAt.Sub(r.StartedAt)
}

// RunStep is one step execution of a run: its task, in execution order.
type RunStep struct {
	Index      int
	Step       string
	TaskID     int64
	Target     string // the task's target: one of a step that fans out has one task per target
	State      State  // the task's
	Attempts   int
	StartedAt  time.Time
	FinishedAt time.Time
	LastError  string
}

// StartRun asks for a run of a job.
type StartRun struct {
	Job        string
	From       int    // plan index of the first step
	Trigger    string // TriggerRunNow, TriggerFromStep
	Actor      string
	OnlyIfIdle bool // refuse (Duplicate) while the job has an unfinished run, whatever its overlap
	// Targets are the target names each step that fans out resolved to, by
	// plan index, resolved by the node starting the run (ResolveRunTargets):
	// a step is enqueued inside another task's end, where nothing can ask
	// the live nodes which targets a tag names.
	Targets map[int][]string
}

// RunStarted is what StartRun did: the new run, or with Duplicate the
// unfinished run the job's overlap policy kept it from starting beside.
type RunStarted struct {
	RunID     int64
	TaskID    int64
	Duplicate bool
}

// RunQuery is one keyset page of a job's runs, newest first.
type RunQuery struct {
	Job    string
	Before int64 // run id; 0: from the newest
	Limit  int
}

// JobStore keeps jobs and their runs (docs/JOBS.md). It persists; the jobs
// package checks and compiles.
type JobStore interface {
	// CreateJob writes a new job and its plan, audited. A taken name gives ErrExists.
	CreateJob(ctx context.Context, j NewJob) error
	// ReplaceJob writes j over the job of its name, audited; runs started
	// before keep the plan they started with. ErrNotFound if none.
	ReplaceJob(ctx context.Context, j NewJob) error
	// GetJob returns a job with its plan and latest run; ErrNotFound if none.
	GetJob(ctx context.Context, name string) (*Job, error)
	// Jobs lists every job by name, each with its latest run, without plans.
	Jobs(ctx context.Context) ([]Job, error)
	// DeleteJob removes a job, audited; its runs and their tasks stay in
	// the history (a running run goes on to its end). ErrNotFound if none.
	DeleteJob(ctx context.Context, name, actor string) error
	// StartRun starts a run at plan step r.From: the run and its first
	// step's task in one transaction, audited. With OverlapSkip (or
	// r.OnlyIfIdle) while the job's latest run is unfinished it starts
	// nothing and returns that run (Duplicate). ErrNotFound if no job.
	StartRun(ctx context.Context, r StartRun) (RunStarted, error)
	// GetRun returns a run with its step executions; ErrNotFound if none.
	GetRun(ctx context.Context, id int64) (*Run, error)
	// Runs returns a keyset page of a job's runs, newest first, without steps.
	Runs(ctx context.Context, q RunQuery) ([]Run, error)
	// CancelRun ends a running run cancelled, audited: its current step's
	// task is cancelled (asked to stop when running) and nothing more runs.
	// ErrInvalidState when the run has ended; ErrNotFound if none.
	CancelRun(ctx context.Context, id int64, actor string) (RunState, error)
	// PurgeRuns deletes up to batch ended runs that finished before cutoff
	// (retention, with the task history).
	PurgeRuns(ctx context.Context, cutoff time.Time, batch int) (int64, error)
}

// StepNext is what the end of a run's step task at plan index step, ended in
// state st (finished), makes of the run, after stepsRun step executions: the
// plan index of the next step (next >= 0), or the state the run ends in with
// a reason. Every dialect follows these rules in the transaction that
// records the end (PostgreSQL and SQL Server in SQL, written after this).
func StepNext(plan []PlanStep, step int, st State, stepsRun int) (next int, end RunState, reason string) {
	s := plan[step]
	switch st {
	case StateCancelled:
		return 0, RunCancelled, fmt.Sprintf("step %s was cancelled", s.Name)
	case StateSucceeded:
		next = s.OnSuccess
	default:
		next = s.OnFailure
	}
	switch {
	case next == StepQuitSuccess:
		return 0, RunSucceeded, fmt.Sprintf("step %s %s: quit reporting success", s.Name, st)
	case next == StepQuitFailure:
		return 0, RunFailed, fmt.Sprintf("step %s %s: quit reporting failure", s.Name, st)
	case stepsRun >= MaxStepExecutions:
		return 0, RunFailed, StepBoundReason
	}
	return next, RunRunning, ""
}

// StepBoundReason is the reason of a run stopped by MaxStepExecutions.
var StepBoundReason = fmt.Sprintf("stopped after %d step executions: the flow's go-to actions loop without reaching a quit", MaxStepExecutions)

// RunCancelledReason is the reason of a run an operator cancelled.
func RunCancelledReason(actor string) string { return "cancelled by " + actor }

// StepTask is the task that runs plan step s of a run on queue q.
func StepTask(q string, s PlanStep, createdBy string) NewTask {
	p := DefaultPriority
	t := NewTask{Queue: q, Body: s.Body, Priority: &p, MaxAttempts: s.MaxAttempts, Timeout: s.Timeout,
		Transactional: s.Transactional, CreatedBy: createdBy, Target: s.Target}
	if s.RetryInterval > 0 {
		t.Retry = &RetryPolicy{Interval: s.RetryInterval} // Agent's retry interval: fixed
	}
	return t
}

// StepCreatedBy is the created_by of a run's step tasks.
func StepCreatedBy(job string) string { return "job:" + job }

// DescribeJob renders a job's definition for the audit log (bodies by size).
func DescribeJob(j NewJob) string {
	var b strings.Builder
	fmt.Fprintf(&b, "enabled=%t queue=%s overlap=%s category=%q steps=%d:", j.Enabled, j.Queue, j.Overlap, j.Category, len(j.Steps))
	for _, s := range j.Steps {
		fmt.Fprintf(&b, " %s(body=%d bytes target=%q attempts=%d on_success=%s on_failure=%s)", s.Name, len(s.Body), s.Target,
			s.MaxAttempts, ActionName(j.Steps, s.OnSuccess), ActionName(j.Steps, s.OnFailure))
	}
	return b.String()
}

// ActionName renders a compiled action as the API writes it.
func ActionName(plan []PlanStep, a int) string {
	switch {
	case a == StepQuitSuccess:
		return "quit_success"
	case a == StepQuitFailure:
		return "quit_failure"
	case a >= 0 && a < len(plan):
		return "step:" + plan[a].Name
	}
	return fmt.Sprintf("step %d", a)
}
