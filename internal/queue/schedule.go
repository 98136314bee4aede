package queue

import (
	"fmt"
	"strings"
	"time"
)

// Overlap is what a schedule does at a fire time while its latest run is
// still unfinished (pending or running).
type Overlap string

// The overlap policies (docs/SCHEDULES.md).
const (
	// OverlapSkip creates no task for that fire time (the default): a
	// maintenance job never runs twice at once.
	OverlapSkip Overlap = "skip"
	// OverlapAllow creates the task anyway.
	OverlapAllow Overlap = "allow"
)

// Misfire is what a schedule does with fire times that passed while no
// scheduler ran (every node down, the store unreachable).
type Misfire string

// The misfire policies (docs/SCHEDULES.md).
const (
	// MisfireRunOnce runs once for all the fire times missed (the default).
	MisfireRunOnce Misfire = "run_once"
	// MisfireSkip runs nothing for them and waits for the next fire time.
	MisfireSkip Misfire = "skip"
)

// FireOutcome is what became of one fire time of a schedule.
type FireOutcome string

// The fire outcomes.
const (
	FireEnqueued       FireOutcome = "enqueued"        // a task was created
	FireSkippedOverlap FireOutcome = "skipped_overlap" // the latest run was unfinished (OverlapSkip)
	FireSkippedMisfire FireOutcome = "skipped_misfire" // the fire times were missed (MisfireSkip)
)

// ScheduleTask is the template of the task each run of a schedule enqueues.
// Its fields mean what they mean on NewTask, and take the same defaults.
type ScheduleTask struct {
	Queue         string
	Body          string
	Priority      *int // nil: DefaultPriority
	Group         string
	MaxAttempts   int           // 0: DefaultMaxAttempts
	Timeout       time.Duration // 0: no limit
	Transactional bool
	// Target names where each run's body runs ("": the queue's default
	// target, else the node's; docs/TARGETS.md).
	Target string
	// Targets, instead of Target, makes each run a fan-out: one task per
	// target these names and tags ("tag:prod") match at the fire time, at
	// most FanOutLimit running at once (0: all); docs/SCHEDULES.md.
	Targets     []string
	FanOutLimit int
}

// NewTask is the task one run enqueues, created by createdBy.
func (t ScheduleTask) NewTask(createdBy string) NewTask {
	return NewTask{Queue: t.Queue, Body: t.Body, Priority: t.Priority, Group: t.Group, MaxAttempts: t.MaxAttempts,
		Timeout: t.Timeout, Transactional: t.Transactional, Target: t.Target, CreatedBy: createdBy}
}

// ScheduleDef is a schedule as an operator defines it: when it fires, what it
// enqueues, and its policies. Zero values take the defaults.
type ScheduleDef struct {
	Name string // 1-64 letters, digits, '_', '.', ':' or '-'; the key
	// Job, when set, is the job whose runs the schedule starts instead of
	// enqueueing Task (docs/JOBS.md); set at creation, never changed.
	Job      string
	Cron     string // five fields, or six with seconds first, or a descriptor such as @daily
	TimeZone string // IANA name, e.g. Europe/Paris; "" is UTC
	Task     ScheduleTask
	Paused   bool
	Overlap  Overlap // "": OverlapSkip
	Misfire  Misfire // "": MisfireRunOnce
}

// Describe renders the definition for the audit log (the body by its size).
func (d ScheduleDef) Describe() string {
	s := fmt.Sprintf("cron=%q time_zone=%s queue=%s body=%d bytes overlap=%s misfire=%s paused=%t",
		d.Cron, d.TimeZone, d.Task.Queue, len(d.Task.Body), d.Overlap, d.Misfire, d.Paused)
	if len(d.Task.Targets) > 0 {
		s += fmt.Sprintf(" targets=%q fanout_limit=%d", JoinSelectors(d.Task.Targets), d.Task.FanOutLimit)
	}
	return s
}

// Schedule is a stored schedule: its definition and what it did last. Its
// cost to read does not grow with history: the latest run is one task, read
// by its id.
type Schedule struct {
	ScheduleDef
	ID      int64
	Version int64 // changes with every change of the definition and every fire
	// NextFireAt is the next fire time; zero while paused (or if the
	// expression never matches again).
	NextFireAt time.Time
	// LastFireAt is the latest fire time handled, LastFireOutcome what became
	// of it, and LastFireMissed how many earlier fire times it stood for
	// (run once after downtime) or skipped with it.
	LastFireAt      time.Time
	LastFireOutcome FireOutcome
	LastFireMissed  int
	// LastTaskID is the latest run (a fire or a Run now), 0 before the first;
	// LastTaskState and LastTaskFinishedAt are that task's state and end now
	// ("" and zero once retention has purged it).
	LastTaskID         int64
	LastTaskState      State
	LastTaskFinishedAt time.Time
	CreatedAt          time.Time
	CreatedBy          string
	UpdatedAt          time.Time
	UpdatedBy          string
}

// ScheduleUpdate changes a schedule; nil fields are left as they are.
// Pause and resume are updates of Paused.
type ScheduleUpdate struct {
	Cron          *string
	TimeZone      *string
	Queue         *string
	Body          *string
	Priority      *int
	Group         *string
	MaxAttempts   *int
	Timeout       *time.Duration
	Transactional *bool
	Target        *string   // "" clears it
	Targets       *[]string // empty clears it
	FanOutLimit   *int
	Paused        *bool
	Overlap       *Overlap
	Misfire       *Misfire
	Actor         string
}

// Apply returns d with the update's fields set.
func (u ScheduleUpdate) Apply(d ScheduleDef) ScheduleDef {
	set(&d.Cron, u.Cron)
	set(&d.TimeZone, u.TimeZone)
	set(&d.Task.Queue, u.Queue)
	set(&d.Task.Body, u.Body)
	if u.Priority != nil {
		p := *u.Priority
		d.Task.Priority = &p
	}
	set(&d.Task.Group, u.Group)
	set(&d.Task.MaxAttempts, u.MaxAttempts)
	set(&d.Task.Timeout, u.Timeout)
	set(&d.Task.Transactional, u.Transactional)
	set(&d.Task.Target, u.Target)
	set(&d.Task.Targets, u.Targets)
	set(&d.Task.FanOutLimit, u.FanOutLimit)
	set(&d.Paused, u.Paused)
	set(&d.Overlap, u.Overlap)
	set(&d.Misfire, u.Misfire)
	return d
}

func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// Action names the update in the audit log: pause_schedule or
// resume_schedule when it only pauses or resumes, else update_schedule.
func (u ScheduleUpdate) Action() string {
	only := u
	only.Paused, only.Actor = nil, ""
	if u.Paused != nil && only == (ScheduleUpdate{}) {
		if *u.Paused {
			return "pause_schedule"
		}
		return "resume_schedule"
	}
	return "update_schedule"
}

// Describe renders the change for the audit log (the body by its size).
func (u ScheduleUpdate) Describe() string {
	var parts []string
	add := func(name string, v any) { parts = append(parts, fmt.Sprintf("%s=%v", name, v)) }
	if u.Cron != nil {
		add("cron", fmt.Sprintf("%q", *u.Cron))
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"time_zone", u.TimeZone}, {"queue", u.Queue}, {"group", u.Group}, {"target", u.Target}} {
		if f.v != nil {
			add(f.name, *f.v)
		}
	}
	if u.Targets != nil {
		add("targets", fmt.Sprintf("%q", JoinSelectors(*u.Targets)))
	}
	if u.FanOutLimit != nil {
		add("fanout_limit", *u.FanOutLimit)
	}
	if u.Body != nil {
		add("body", fmt.Sprintf("%d bytes", len(*u.Body)))
	}
	if u.Priority != nil {
		add("priority", *u.Priority)
	}
	if u.MaxAttempts != nil {
		add("max_attempts", *u.MaxAttempts)
	}
	if u.Timeout != nil {
		add("timeout", *u.Timeout)
	}
	if u.Transactional != nil {
		add("transactional", *u.Transactional)
	}
	if u.Paused != nil {
		add("paused", *u.Paused)
	}
	if u.Overlap != nil {
		add("overlap", *u.Overlap)
	}
	if u.Misfire != nil {
		add("misfire", *u.Misfire)
	}
	return strings.Join(parts, " ")
}

// DueSchedule is what a scheduler needs to plan the fire of a due schedule.
type DueSchedule struct {
	ID         int64
	Name       string
	Cron       string
	TimeZone   string
	Misfire    Misfire
	Version    int64
	NextFireAt time.Time
	LastFireAt time.Time
	// Targets are the selectors of a schedule that fans out: the scheduler
	// resolves them before it fires (ScheduleFire.FanOut).
	Targets     []string
	FanOutLimit int
	// Job is the job a job's schedule starts a run of: the scheduler
	// resolves the targets of its steps that fan out before it fires.
	Job string
}

// DueSchedules is what ScheduleStore.DueSchedules found.
type DueSchedules struct {
	Now  time.Time     // the time they are due at: the caller's, or the database's clock
	Due  []DueSchedule // next fire time at or before Now, soonest first
	Next time.Time     // the soonest next fire time after Now; zero if none
}

// ScheduleFire is one fire of a schedule, as a scheduler planned it from a
// DueSchedule: it is made only if the schedule is still at Version.
type ScheduleFire struct {
	ID      int64
	Version int64
	Name    string // for messages
	// FireAt is the latest fire time due; Missed counts the earlier ones it
	// stands for.
	FireAt time.Time
	Missed int
	// SkipMissed records the fire times as skipped without a task (MisfireSkip).
	SkipMissed bool
	// Next is the schedule's next fire time afterwards; zero if none.
	Next time.Time
	// FanOut is the fan-out the scheduler resolved for a schedule with
	// targets (nil for one without): the tasks the fire creates.
	FanOut *FanOutFire
}

// Fired is what ScheduleStore.FireSchedule did.
type Fired struct {
	// Won: this call made the fire. False when another node made it first, or
	// the schedule changed since it was read (nothing was written).
	Won     bool
	Outcome FireOutcome
	// TaskID is the task created (FireEnqueued), or the unfinished latest run
	// (FireSkippedOverlap).
	TaskID int64
	Queue  string // the queue of the task created
}

// CheckScheduleName returns a *ValidationError when name cannot name a
// schedule. The rule is a queue name's: a schedule's name goes into URLs.
func CheckScheduleName(field, name string) error { return checkName("schedule", field, name) }

// ScheduleCreatedBy is the created_by of the tasks a schedule's fires create.
func ScheduleCreatedBy(name string) string { return "schedule:" + name }

// MaxDueLimit bounds one DueSchedules read.
const MaxDueLimit = 1000

// CheckDueLimit validates the limit of a DueSchedules read.
func CheckDueLimit(limit int) error {
	if limit < 1 || limit > MaxDueLimit {
		return &ValidationError{Field: "limit", Reason: fmt.Sprintf("is %d: read 1 to %d due schedules", limit, MaxDueLimit)}
	}
	return nil
}
