package jobs

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"readpast/internal/queue"
	"readpast/internal/schedule"
)

// The bounds of a job (Agent's own, or near them).
const (
	MaxSteps         = 100
	MaxStepNameBytes = 128
	MaxTextBytes     = 4000 // description, category
	MaxJobNameBytes  = 60   // so its schedules' names, <job>:<n>, are schedule names
	MaxSchedules     = 20
)

// The actions of a step.
const (
	ActionNext        = "next"
	ActionQuitSuccess = "quit_success"
	ActionQuitFailure = "quit_failure"
	actionStepPrefix  = "step:"
)

// Compile checks d and returns the job the store writes, owned by owner
// (the operator who made it): its plan has each action as a plan index or
// a quit. Warnings are what is allowed but likely a mistake (a step no flow
// reaches). A bad definition gives a *queue.ValidationError naming the field.
func Compile(d Definition, owner string, maxBody int) (queue.NewJob, []string, error) {
	bad := func(field, format string, args ...any) (queue.NewJob, []string, error) {
		return queue.NewJob{}, nil, &queue.ValidationError{Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	if err := checkJobName(d.Name); err != nil {
		return queue.NewJob{}, nil, err
	}
	for field, v := range map[string]string{"description": d.Description, "category": d.Category} {
		if len(v) > MaxTextBytes || !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 {
			return bad(field, "must be valid text of at most %d bytes", MaxTextBytes)
		}
	}
	if d.Queue == "" {
		d.Queue = queue.DefaultQueue
	}
	if err := queue.CheckQueueName("queue", d.Queue); err != nil {
		return queue.NewJob{}, nil, err
	}
	overlap := queue.Overlap(d.Overlap)
	switch overlap {
	case "":
		overlap = queue.OverlapSkip
	case queue.OverlapSkip, queue.OverlapAllow:
	default:
		return bad("overlap", "%q is not one of skip, allow", d.Overlap)
	}
	if len(d.Steps) < 1 || len(d.Steps) > MaxSteps {
		return bad("steps", "has %d steps: a job has 1 to %d", len(d.Steps), MaxSteps)
	}
	index := map[string]int{}
	for i, s := range d.Steps {
		field := fmt.Sprintf("steps[%d].name", i)
		if strings.TrimSpace(s.Name) == "" || len(s.Name) > MaxStepNameBytes || !utf8.ValidString(s.Name) || strings.ContainsAny(s.Name, "\x00\r\n\t") {
			return bad(field, "%q is not a step name: give 1 to %d bytes of text on one line", s.Name, MaxStepNameBytes)
		}
		if _, dup := index[s.Name]; dup {
			return bad(field, "%q names two steps: step names are unique in a job (a go-to names one)", s.Name)
		}
		index[s.Name] = i
	}
	plan := make([]queue.PlanStep, len(d.Steps))
	for i, s := range d.Steps {
		field := func(f string) string { return fmt.Sprintf("steps[%d].%s", i, f) }
		if s.RetryAttempts < 0 || s.RetryAttempts >= queue.MaxAttemptsLimit {
			return bad(field("retry_attempts"), "is %d: use 0 to %d", s.RetryAttempts, queue.MaxAttemptsLimit-1)
		}
		if s.RetryInterval < 0 || time.Duration(s.RetryInterval) > 24*time.Hour {
			return bad(field("retry_interval"), "is %s: use 0 (the queue's back-off) up to 24h", time.Duration(s.RetryInterval))
		}
		if err := queue.CheckTargetName(field("target"), s.Target); err != nil {
			return queue.NewJob{}, nil, err
		}
		if s.Transactional && s.Target != "" && s.Target != queue.TargetStore {
			return bad(field("target"), "is %q but the step is transactional: its body commits with its end in the store's transaction, so it runs only on the store (target %q); drop transactional or the target", s.Target, queue.TargetStore)
		}
		p := queue.PlanStep{Name: s.Name, Body: s.Body, Target: s.Target, Timeout: time.Duration(s.Timeout),
			Transactional: s.Transactional, MaxAttempts: s.RetryAttempts + 1, RetryInterval: time.Duration(s.RetryInterval).Round(time.Millisecond),
			Targets: s.Targets, FanOutLimit: s.FanOutLimit}
		if err := checkStepFanOut(d.Queue, p, field); err != nil {
			return queue.NewJob{}, nil, err
		}
		if _, err := queue.StepTask(d.Queue, p, queue.StepCreatedBy(d.Name)).Normalize(maxBody); err != nil {
			if ve, ok := err.(*queue.ValidationError); ok {
				ve.Field = field(ve.Field)
			}
			return queue.NewJob{}, nil, err
		}
		var err error
		if p.OnSuccess, err = action(s.OnSuccess, ActionNext, i, len(d.Steps), index, field("on_success")); err != nil {
			return queue.NewJob{}, nil, err
		}
		if p.OnFailure, err = action(s.OnFailure, ActionQuitFailure, i, len(d.Steps), index, field("on_failure")); err != nil {
			return queue.NewJob{}, nil, err
		}
		plan[i] = p
	}
	enabled := d.Enabled == nil || *d.Enabled
	if len(d.Schedules) > MaxSchedules {
		return bad("schedules", "has %d schedules: a job has at most %d", len(d.Schedules), MaxSchedules)
	}
	for i := range d.Schedules {
		if _, _, err := Schedule(d, i, overlap, enabled, time.Now()); err != nil {
			return queue.NewJob{}, nil, err
		}
	}
	d.Enabled = &enabled
	def, err := json.Marshal(d)
	if err != nil {
		return queue.NewJob{}, nil, err
	}
	j := queue.NewJob{Name: d.Name, Description: d.Description, Category: d.Category, Owner: owner, Enabled: enabled,
		Queue: d.Queue, Overlap: overlap, Definition: string(def), Steps: plan, Actor: owner}
	return j, Unreachable(plan), nil
}

// action compiles step i's action a (def when empty).
func action(a, def string, i, n int, index map[string]int, field string) (int, error) {
	if a == "" {
		a = def
	}
	switch {
	case a == ActionNext:
		if i+1 < n {
			return i + 1, nil
		}
		return queue.StepQuitSuccess, nil // Agent: "next" after the last step quits with success
	case a == ActionQuitSuccess:
		return queue.StepQuitSuccess, nil
	case a == ActionQuitFailure:
		return queue.StepQuitFailure, nil
	case strings.HasPrefix(a, actionStepPrefix):
		name := strings.TrimPrefix(a, actionStepPrefix)
		if j, ok := index[name]; ok {
			return j, nil
		}
		return 0, &queue.ValidationError{Field: field, Reason: fmt.Sprintf("%q goes to step %q, which the job does not have", a, name)}
	}
	return 0, &queue.ValidationError{Field: field, Reason: fmt.Sprintf("%q is not one of next, step:NAME, quit_success, quit_failure", a)}
}

// Unreachable returns a warning for each step that no flow from the first
// step reaches (it runs only by Run from step).
func Unreachable(plan []queue.PlanStep) []string {
	seen := make([]bool, len(plan))
	stack := []int{0}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if i < 0 || i >= len(plan) || seen[i] {
			continue
		}
		seen[i] = true
		stack = append(stack, plan[i].OnSuccess, plan[i].OnFailure)
	}
	var out []string
	for i, ok := range seen {
		if !ok {
			out = append(out, fmt.Sprintf("step %s is unreachable: no step's action goes to it, so it runs only by Run from step", plan[i].Name))
		}
	}
	return out
}

// checkJobName refuses a name that is not a job name.
func checkJobName(name string) error {
	if !queue.ValidQueueName(name) || len(name) > MaxJobNameBytes {
		return &queue.ValidationError{Field: "name", Reason: fmt.Sprintf("%q is not a job name: use 1 to %d letters, digits, '_', '.', ':' or '-', not only dots", name, MaxJobNameBytes)}
	}
	return nil
}

// StepIndex returns the plan index of the step named name.
func StepIndex(plan []queue.PlanStep, name string) (int, error) {
	for i, s := range plan {
		if s.Name == name {
			return i, nil
		}
	}
	return 0, &queue.ValidationError{Field: "from_step", Reason: fmt.Sprintf("the job has no step named %q", name)}
}

// ScheduleName is the name of a job's schedule i (from 0): <job>:<i+1>.
func ScheduleName(job string, i int) string { return fmt.Sprintf("%s:%d", job, i+1) }

// Schedule is the schedule i of d as the schedule package checks and stores
// it: it starts runs of the job (paused while the job is disabled), with the
// job's overlap policy, and its next fire time after now.
func Schedule(d Definition, i int, overlap queue.Overlap, enabled bool, now time.Time) (queue.ScheduleDef, time.Time, error) {
	sc := d.Schedules[i]
	q := d.Queue
	if q == "" {
		q = queue.DefaultQueue
	}
	def := queue.ScheduleDef{Name: ScheduleName(d.Name, i), Cron: sc.Cron, TimeZone: sc.TimeZone, Job: d.Name,
		Task:   queue.ScheduleTask{Queue: q, Body: "-- a run of job " + d.Name},
		Paused: !enabled, Overlap: overlap, Misfire: queue.Misfire(sc.Misfire)}
	out, next, err := schedule.Prepare(def, 0, now)
	if ve, ok := err.(*queue.ValidationError); ok {
		ve.Field = fmt.Sprintf("schedules[%d].%s", i, ve.Field)
	}
	out.Job = d.Name
	return out, next, err
}
