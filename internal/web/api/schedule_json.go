package api

import (
	"time"

	"readpast/internal/ops"
	"readpast/internal/queue"
)

// scheduleIn is POST /api/schedules: a schedule's definition, its task
// template flat beside it, with the names and defaults of POST /api/tasks.
type scheduleIn struct {
	Name           string   `json:"name"`
	Cron           string   `json:"cron"`
	TimeZone       *string  `json:"time_zone"`
	Queue          *string  `json:"queue"`
	Body           string   `json:"body"`
	Priority       *int     `json:"priority"`
	Group          *string  `json:"group"`
	MaxAttempts    *int     `json:"max_attempts"` // nil: the default; 0 is refused
	TimeoutSeconds *float64 `json:"timeout_seconds"`
	Transactional  bool     `json:"transactional"`
	Paused         bool     `json:"paused"`
	Overlap        string   `json:"overlap"`
	Misfire        string   `json:"misfire"`
	Target         *string  `json:"target"`
	// Targets, instead of target, makes each fire a fan-out: one task per
	// target the names and tags ("tag:prod") match at the fire time, at most
	// FanOutLimit running at once (docs/SCHEDULES.md, "Fan-out").
	Targets     []string `json:"targets"`
	FanOutLimit *int     `json:"fanout_limit"`
}

// def converts the input; the schedule package checks the rest and names the
// field.
func (in scheduleIn) def() (queue.ScheduleDef, error) {
	d := queue.ScheduleDef{Name: in.Name, Cron: in.Cron, Paused: in.Paused,
		Overlap: queue.Overlap(in.Overlap), Misfire: queue.Misfire(in.Misfire),
		Task: queue.ScheduleTask{Body: in.Body, Priority: in.Priority, Transactional: in.Transactional, Targets: in.Targets}}
	if in.FanOutLimit != nil {
		if *in.FanOutLimit == 0 {
			return d, &queue.ValidationError{Field: "fanout_limit", Reason: "is 0: give 1 or more servers at once, or leave it out for all"}
		}
		d.Task.FanOutLimit = *in.FanOutLimit
	}
	var err error
	if d.TimeZone, err = given("", "time_zone", in.TimeZone, "leave it out for UTC"); err != nil {
		return d, err
	}
	if d.Task.Queue, err = given("", "queue", in.Queue, "leave it out for the queue "+queue.DefaultQueue); err != nil {
		return d, err
	}
	if d.Task.Group, err = given("", "group", in.Group, "leave it out for no group"); err != nil {
		return d, err
	}
	if d.Task.Target, err = given("", "target", in.Target, "leave it out for the queue's default target"); err != nil {
		return d, err
	}
	if m := in.MaxAttempts; m != nil {
		if err := queue.CheckMaxAttempts(*m); err != nil {
			return d, err
		}
		d.Task.MaxAttempts = *m
	}
	d.Task.Timeout, err = timeoutOf("", in.TimeoutSeconds)
	return d, err
}

// schedulePatch is PATCH /api/schedules/{name}; absent fields stay as they
// are. null sets a field to its default (time_zone UTC, queue default,
// priority 100, group none, max_attempts 3, timeout none, overlap skip,
// misfire run_once); cron, body, transactional and paused have none.
type schedulePatch struct {
	Name           optional[string]  `json:"name"` // refused: the name is the key
	Cron           optional[string]  `json:"cron"`
	TimeZone       optional[string]  `json:"time_zone"`
	Queue          optional[string]  `json:"queue"`
	Body           optional[string]  `json:"body"`
	Priority       optional[int]     `json:"priority"`
	Group          optional[string]  `json:"group"`
	MaxAttempts    optional[int]     `json:"max_attempts"`
	TimeoutSeconds optional[float64] `json:"timeout_seconds"`
	Transactional  optional[bool]    `json:"transactional"`
	Paused         optional[bool]    `json:"paused"`
	Overlap        optional[string]  `json:"overlap"`
	Misfire        optional[string]  `json:"misfire"`
	Target         optional[string]  `json:"target"` // null: the queue's default target
	// Targets: null or [] ends the fan-out; FanOutLimit: null runs every
	// target at once.
	Targets     optional[[]string] `json:"targets"`
	FanOutLimit optional[int]      `json:"fanout_limit"`
}

// update converts the patch; nothing in it may be left unchecked by the store.
func (in schedulePatch) update() (queue.ScheduleUpdate, error) {
	var u queue.ScheduleUpdate
	for _, f := range []struct {
		name string
		null bool
	}{{"cron", in.Cron.Null}, {"body", in.Body.Null}, {"transactional", in.Transactional.Null}, {"paused", in.Paused.Null}} {
		if f.null {
			return u, &queue.ValidationError{Field: f.name, Reason: "cannot be null: give a value, or leave the field out to keep it"}
		}
	}
	if in.Name.Set {
		return u, &queue.ValidationError{Field: "name", Reason: "cannot be changed: a schedule's name is its key; create a schedule with the new name and delete this one"}
	}
	for _, f := range []struct {
		name      string
		o         optional[string]
		nullMeans string
	}{{"time_zone", in.TimeZone, "UTC"}, {"queue", in.Queue, "the queue " + queue.DefaultQueue}, {"group", in.Group, "no group"},
		{"target", in.Target, "the queue's default target"}} {
		if err := givenOrNull(f.name, f.o, f.nullMeans); err != nil {
			return u, err
		}
	}
	u.Cron, u.TimeZone, u.Queue, u.Body, u.Group = in.Cron.ptr(), in.TimeZone.ptr(), in.Queue.ptr(), in.Body.ptr(), in.Group.ptr()
	u.Target = in.Target.ptr()
	if in.Targets.Set {
		sels := in.Targets.V // null: none
		u.Targets = &sels
	}
	if in.FanOutLimit.Set {
		if !in.FanOutLimit.Null && in.FanOutLimit.V == 0 {
			return u, &queue.ValidationError{Field: "fanout_limit", Reason: "is 0: give 1 or more servers at once, or null for all"}
		}
		u.FanOutLimit = in.FanOutLimit.ptr() // null: 0, all at once
	}
	u.Transactional, u.Paused = in.Transactional.ptr(), in.Paused.ptr()
	if in.Overlap.Set {
		o := queue.Overlap(in.Overlap.V)
		u.Overlap = &o
	}
	if in.Misfire.Set {
		m := queue.Misfire(in.Misfire.V)
		u.Misfire = &m
	}
	if in.Priority.Set {
		p := in.Priority.V
		if in.Priority.Null {
			p = queue.DefaultPriority
		}
		u.Priority = &p
	}
	if in.MaxAttempts.Set {
		m := in.MaxAttempts.V // null: 0, the default
		if !in.MaxAttempts.Null {
			if err := queue.CheckMaxAttempts(m); err != nil {
				return u, err
			}
		}
		u.MaxAttempts = &m
	}
	if in.TimeoutSeconds.Set {
		d, err := timeoutOf("", &in.TimeoutSeconds.V) // null: 0, no limit
		if err != nil {
			return u, err
		}
		u.Timeout = &d
	}
	if u == (queue.ScheduleUpdate{}) {
		return u, &queue.ValidationError{Field: "body", Reason: "changes nothing: give at least one field of the schedule"}
	}
	return u, nil
}

// Schedule is a schedule as the API returns it.
type Schedule struct {
	Name           string   `json:"name"`
	Cron           string   `json:"cron"`
	TimeZone       string   `json:"time_zone"`
	Queue          string   `json:"queue"`
	Body           string   `json:"body"`
	Priority       int      `json:"priority"`
	Group          *string  `json:"group"`
	MaxAttempts    int      `json:"max_attempts"`
	TimeoutSeconds *float64 `json:"timeout_seconds"`
	Transactional  bool     `json:"transactional"`
	Paused         bool     `json:"paused"`
	Overlap        string   `json:"overlap"`
	Misfire        string   `json:"misfire"`
	Target         *string  `json:"target"` // null: the queue's default target
	// Targets are a fan-out's names and tags ([] for none), FanOutLimit how
	// many of its servers run at once (null: all).
	Targets     []string `json:"targets"`
	FanOutLimit *int     `json:"fanout_limit"`
	// NextFireAt is the next fire time (null while paused); NextFireTimes
	// are the next five, each in UTC and in the schedule's zone.
	NextFireAt    *time.Time `json:"next_fire_at"`
	NextFireTimes []FireTime `json:"next_fire_times"`
	// The latest fire time handled, what became of it, and how many earlier
	// ones it stood for or skipped with it.
	LastFireAt      *time.Time `json:"last_fire_at"`
	LastFireOutcome *string    `json:"last_fire_outcome"`
	LastFireMissed  int        `json:"last_fire_missed"`
	// LastRun is the latest task a fire or a run now created; null before the first.
	LastRun   *ScheduleRun `json:"last_run"`
	CreatedAt time.Time    `json:"created_at"`
	CreatedBy string       `json:"created_by"`
	UpdatedAt time.Time    `json:"updated_at"`
	UpdatedBy string       `json:"updated_by"`
}

// FireTime is one fire time: the instant in UTC, and the wall-clock time in
// the schedule's zone with its offset (both RFC 3339).
type FireTime struct {
	UTC   time.Time `json:"utc"`
	Local time.Time `json:"local"`
}

// ScheduleRun is a schedule's latest run: its task, and that task's state and
// end now (null once retention purged the task, or while it runs).
type ScheduleRun struct {
	TaskID     int64      `json:"task_id"`
	State      *string    `json:"state"`
	FinishedAt *time.Time `json:"finished_at"`
}

func toSchedule(s *queue.Schedule) Schedule {
	o := Schedule{Name: s.Name, Cron: s.Cron, TimeZone: s.TimeZone, Queue: s.Task.Queue, Body: s.Task.Body,
		Priority: queue.DefaultPriority, Group: orNull(s.Task.Group), MaxAttempts: s.Task.MaxAttempts,
		TimeoutSeconds: timeoutSeconds(s.Task.Timeout), Transactional: s.Task.Transactional, Paused: s.Paused,
		Overlap: string(s.Overlap), Misfire: string(s.Misfire), Target: orNull(s.Task.Target), NextFireAt: optTime(s.NextFireAt), NextFireTimes: []FireTime{},
		LastFireAt: optTime(s.LastFireAt), LastFireOutcome: orNull(string(s.LastFireOutcome)), LastFireMissed: s.LastFireMissed,
		CreatedAt: s.CreatedAt.UTC(), CreatedBy: s.CreatedBy, UpdatedAt: s.UpdatedAt.UTC(), UpdatedBy: s.UpdatedBy}
	if s.Task.Priority != nil {
		o.Priority = *s.Task.Priority
	}
	o.Targets = append([]string{}, s.Task.Targets...)
	if s.Task.FanOutLimit > 0 {
		l := s.Task.FanOutLimit
		o.FanOutLimit = &l
	}
	for _, at := range ops.UpcomingFires(s, ops.UpcomingShown) {
		o.NextFireTimes = append(o.NextFireTimes, FireTime{UTC: at.UTC(), Local: at})
	}
	if s.LastTaskID != 0 {
		o.LastRun = &ScheduleRun{TaskID: s.LastTaskID, State: orNull(string(s.LastTaskState)), FinishedAt: optTime(s.LastTaskFinishedAt)}
	}
	return o
}
