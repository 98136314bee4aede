package schedule

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"readpast/internal/queue"
)

// Prepare checks a schedule's definition and returns it with its defaults
// filled in (time zone UTC, overlap skip, misfire run once, the task's
// defaults; the cron expression trimmed), and its first fire time after now (zero when paused). maxBody is
// the store's body limit (0: queue.DefaultMaxBodyBytes). The error is a
// *queue.ValidationError naming the field; nothing is written then.
func Prepare(d queue.ScheduleDef, maxBody int, now time.Time) (queue.ScheduleDef, time.Time, error) {
	fail := func(err error) (queue.ScheduleDef, time.Time, error) { return queue.ScheduleDef{}, time.Time{}, err }
	if err := queue.CheckScheduleName("name", d.Name); err != nil {
		return fail(err)
	}
	d.Cron = strings.TrimSpace(d.Cron)
	spec, err := Parse(d.Cron, d.TimeZone)
	if err != nil {
		return fail(err)
	}
	if d.TimeZone == "" {
		d.TimeZone = "UTC"
	}
	next := spec.Next(now)
	if next.IsZero() {
		return fail(&queue.ValidationError{Field: "cron", Reason: fmt.Sprintf("%q can never fire: no date matches it (such as 30 February)", d.Cron)})
	}
	task, err := d.Task.NewTask(queue.ScheduleCreatedBy(d.Name)).Normalize(maxBody)
	if err != nil {
		return fail(err)
	}
	if len(d.Task.Targets) == 0 {
		d.Task.Targets = nil // none, however given
	}
	if err := checkFanOut(d, task); err != nil {
		return fail(err)
	}
	d.Task = queue.ScheduleTask{Queue: task.Queue, Body: task.Body, Priority: task.Priority, Group: task.Group,
		MaxAttempts: task.MaxAttempts, Timeout: task.Timeout, Transactional: task.Transactional, Target: task.Target,
		Targets: d.Task.Targets, FanOutLimit: d.Task.FanOutLimit}
	if err := oneOf("overlap", &d.Overlap, queue.OverlapSkip, queue.OverlapAllow); err != nil {
		return fail(err)
	}
	if err := oneOf("misfire", &d.Misfire, queue.MisfireRunOnce, queue.MisfireSkip); err != nil {
		return fail(err)
	}
	if d.Paused {
		next = time.Time{}
	}
	return d, next, nil
}

// oneOf sets *v to the first of allowed, its default, when it is empty, and
// refuses a value that is none of them.
func oneOf[T ~string](field string, v *T, allowed ...T) error {
	switch {
	case *v == "":
		*v = allowed[0]
	case !slices.Contains(allowed, *v):
		names := make([]string, len(allowed))
		for i, a := range allowed {
			names[i] = string(a)
		}
		return &queue.ValidationError{Field: field, Reason: fmt.Sprintf("%q is not one of %s", *v, strings.Join(names, ", "))}
	}
	return nil
}
