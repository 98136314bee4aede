package api

import (
	"fmt"
	"strconv"
	"time"

	"readpast/internal/logs"
	"readpast/internal/queue"
)

// Bounds of the API's duration fields (docs/API.md).
const (
	maxDelaySeconds = 10 * 366 * 24 * 3600 // ten years; use available_at beyond
	maxBatchTasks   = 1000
)

// taskIn is one task to enqueue, as the API takes it.
type taskIn struct {
	Body              string   `json:"body"`
	Queue             *string  `json:"queue"`
	Priority          *int     `json:"priority"`
	DelaySeconds      *float64 `json:"delay_seconds"`
	AvailableAt       *string  `json:"available_at"`
	Group             *string  `json:"group"`
	Chain             *string  `json:"chain"`
	Stage             *int     `json:"stage"`
	MaxAttempts       *int     `json:"max_attempts"` // nil: the default; 0 is refused
	TimeoutSeconds    *float64 `json:"timeout_seconds"`
	Transactional     bool     `json:"transactional"`
	ContinueOnFailure bool     `json:"continue_on_failure"`
	UniqueKey         *string  `json:"unique_key"`
	// Target names where the body runs (docs/TARGETS.md); Targets makes a
	// fan-out (POST /api/tasks only): one task per target or tag:NAME, at
	// most FanOutLimit of them running at once.
	Target      *string    `json:"target"`
	Targets     []string   `json:"targets"`
	FanOutLimit *int       `json:"fanout_limit"`
	Retry       *RetryJSON `json:"retry"` // nil: the queue's policy, else the default back-off
	Name        *string    `json:"name"`
}

// newTask converts and validates the input; prefix goes before field names in
// errors ("tasks[3]."). maxBody is the store's body limit.
func (in taskIn) newTask(prefix string, maxBody int) (queue.NewTask, error) {
	bad := func(field, format string, args ...any) (queue.NewTask, error) {
		return queue.NewTask{}, &queue.ValidationError{Field: prefix + field, Reason: fmt.Sprintf(format, args...)}
	}
	t := queue.NewTask{Body: in.Body, Priority: in.Priority, Transactional: in.Transactional, ContinueOnFailure: in.ContinueOnFailure}
	for _, f := range []struct {
		name     string
		v        *string
		to       *string
		leaveOut string
	}{
		{"queue", in.Queue, &t.Queue, "leave it out for the queue " + queue.DefaultQueue},
		{"group", in.Group, &t.Group, "leave it out for no group"},
		{"chain", in.Chain, &t.Chain, "leave it out for no chain"},
		{"unique_key", in.UniqueKey, &t.UniqueKey, "leave it out for no unique key (a key is 1 to 128 bytes)"},
		{"target", in.Target, &t.Target, "leave it out for the queue's default target"},
		{"name", in.Name, &t.Name, "leave it out for no name (a name is 1 to 200 characters)"},
	} {
		v, err := given(prefix, f.name, f.v, f.leaveOut)
		if err != nil {
			return queue.NewTask{}, err
		}
		*f.to = v
	}
	if in.Stage != nil {
		t.Stage = *in.Stage
	}
	if m := in.MaxAttempts; m != nil {
		if err := queue.CheckMaxAttempts(*m); err != nil {
			return queue.NewTask{}, prefixed(prefix, err)
		}
		t.MaxAttempts = *m
	}
	if in.DelaySeconds != nil && in.AvailableAt != nil {
		return bad("delay_seconds", "and available_at are both set: give one of them")
	}
	if d := in.DelaySeconds; d != nil {
		if *d < 0 || *d > maxDelaySeconds {
			return bad("delay_seconds", "is %s seconds: use 0 to %d (ten years), or give available_at", strconv.FormatFloat(*d, 'f', -1, 64), maxDelaySeconds)
		}
		t.Delay = time.Duration(*d * float64(time.Second))
	}
	if a := in.AvailableAt; a != nil {
		at, err := time.Parse(time.RFC3339Nano, *a)
		if err != nil {
			return bad("available_at", "%q is not an RFC 3339 time such as 2026-01-02T15:04:05Z", *a)
		}
		t.AvailableAt = at.UTC()
	}
	var err error
	if t.Timeout, err = timeoutOf(prefix, in.TimeoutSeconds); err != nil {
		return queue.NewTask{}, err
	}
	if in.Retry != nil {
		p := in.Retry.policy()
		t.Retry = &p
	}
	n, err := t.Normalize(maxBody)
	return n, prefixed(prefix, err)
}

// timeoutOf reads a timeout_seconds field: nil and 0 are no limit; the rule
// is queue.TimeoutSeconds, which the forms share.
func timeoutOf(prefix string, s *float64) (time.Duration, error) {
	if s == nil {
		return 0, nil
	}
	return queue.TimeoutSeconds(prefix+"timeout_seconds", *s)
}

// timeoutSeconds is a timeout as the API shows it: null for no limit.
func timeoutSeconds(d time.Duration) *float64 {
	if d <= 0 {
		return nil
	}
	s := d.Seconds()
	return &s
}

// prefixed names the field of a validation error as the API does: with its
// API name (timeout_seconds for the model's timeout), after prefix ("tasks[3].").
func prefixed(prefix string, err error) error {
	if ve, ok := err.(*queue.ValidationError); ok {
		switch ve.Field {
		case "timeout", "delay":
			ve.Field += "_seconds"
		}
		ve.Field = prefix + ve.Field
	}
	return err
}

// Task is a task as the API returns it; times are RFC 3339 UTC and absent
// values are null.
type Task struct {
	ID                int64      `json:"id"`
	Queue             string     `json:"queue"`
	Body              string     `json:"body"`
	Priority          int        `json:"priority"`
	AvailableAt       time.Time  `json:"available_at"`
	Group             *string    `json:"group"`
	Chain             *string    `json:"chain"`
	Stage             int        `json:"stage"`
	MaxAttempts       int        `json:"max_attempts"`
	TimeoutSeconds    *float64   `json:"timeout_seconds"`
	Transactional     bool       `json:"transactional"`
	ContinueOnFailure bool       `json:"continue_on_failure"`
	State             string     `json:"state"`
	Attempts          int        `json:"attempts"`
	CreatedAt         time.Time  `json:"created_at"`
	CreatedBy         *string    `json:"created_by"`
	StartedAt         *time.Time `json:"started_at"`
	FinishedAt        *time.Time `json:"finished_at"`
	LastError         *string    `json:"last_error"`
	LeaseOwner        *string    `json:"lease_owner"`
	LeaseExpiresAt    *time.Time `json:"lease_expires_at"`
	SessionID         *string    `json:"session_id"`
	CancelRequested   bool       `json:"cancel_requested"`
	ChainWait         bool       `json:"chain_wait"`
	UniqueKey         *string    `json:"unique_key"`
	Name              *string    `json:"name"`
	Schedule          *string    `json:"schedule"` // the schedule that created it
	FireAt            *time.Time `json:"fire_at"`  // the fire time it is the run of; null for a run now
	Target            *string    `json:"target"`   // null: its queue's default target, else the node's
}

// Enqueued answers an enqueue of one task (POST /api/tasks, a schedule's
// run now): the task, and whether it is an unfinished task that held the
// unique key already (or the schedule's unfinished latest run), in which case
// nothing was created.
type Enqueued struct {
	Task
	Duplicate bool `json:"duplicate"`
}

// TaskDetail is GET /api/tasks/{id}: the task, why it waits, and its attempts.
type TaskDetail struct {
	Task
	Why *string    `json:"why"`
	Log []logs.Row `json:"log"`
	// Results is the result output its attempts kept, oldest first
	// (docs/QUEUE.md, "Result output"); empty when its queue keeps none.
	Results []logs.AttemptResults `json:"results"`
}

func toTask(t *queue.Task) Task {
	o := Task{ID: t.ID, Queue: t.Queue, Body: t.Body, Priority: t.Priority, AvailableAt: t.AvailableAt.UTC(),
		Group: orNull(t.Group), Chain: orNull(t.Chain), Stage: t.Stage, MaxAttempts: t.MaxAttempts,
		Transactional: t.Transactional, ContinueOnFailure: t.ContinueOnFailure, State: string(t.State),
		Attempts: t.Attempts, CreatedAt: t.CreatedAt.UTC(), CreatedBy: orNull(t.CreatedBy), StartedAt: optTime(t.StartedAt),
		FinishedAt: optTime(t.FinishedAt), LastError: orNull(t.LastError), CancelRequested: t.CancelRequested,
		ChainWait: t.ChainWait, TimeoutSeconds: timeoutSeconds(t.Timeout), UniqueKey: orNull(t.UniqueKey), Name: orNull(t.Name),
		Schedule: orNull(t.Schedule), FireAt: optTime(t.FireAt), Target: orNull(t.Target)}
	if t.State == queue.StateRunning {
		o.LeaseOwner, o.LeaseExpiresAt, o.SessionID = orNull(t.LeaseOwner), optTime(t.LeaseExpiresAt), orNull(t.SessionID)
	}
	return o
}

// orNull is v, or nil (JSON null) when v is its type's zero value: absent
// values are null, never "" or 0 (docs/API.md).
func orNull[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func toTaskDetail(t *queue.Task, recs []queue.AttemptRecord) TaskDetail {
	d := TaskDetail{Task: toTask(t), Why: orNull(t.Why), Log: make([]logs.Row, len(recs))}
	for i, r := range recs {
		d.Log[i] = logs.FromRecord(r)
	}
	return d
}

// RetryJSON is a retry policy in the API (queue.RetryPolicy): a fixed wait of
// interval_seconds, or with cap_seconds a wait doubling from it up to the cap.
type RetryJSON struct {
	IntervalSeconds float64  `json:"interval_seconds"`
	CapSeconds      *float64 `json:"cap_seconds"`
}

func (r RetryJSON) policy() queue.RetryPolicy {
	p := queue.RetryPolicy{Interval: time.Duration(r.IntervalSeconds * float64(time.Second))}
	if r.CapSeconds != nil {
		p.Cap = time.Duration(*r.CapSeconds * float64(time.Second))
	}
	return p
}

func toRetry(p *queue.RetryPolicy) *RetryJSON {
	if p == nil {
		return nil
	}
	r := &RetryJSON{IntervalSeconds: p.Interval.Seconds()}
	if p.Cap > 0 {
		c := p.Cap.Seconds()
		r.CapSeconds = &c
	}
	return r
}
