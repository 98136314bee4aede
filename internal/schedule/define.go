package schedule

import (
	"context"
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
// *queue.ValidationError naming the field; a store writes nothing then.
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
	d.Task = queue.ScheduleTask{Queue: task.Queue, Body: task.Body, Priority: task.Priority, Group: task.Group,
		MaxAttempts: task.MaxAttempts, Timeout: task.Timeout, Transactional: task.Transactional}
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

// PrepareCreate is Prepare for a new schedule created by actor.
func PrepareCreate(d queue.ScheduleDef, actor string, maxBody int, now time.Time) (queue.ScheduleDef, time.Time, error) {
	if err := CheckActor(actor); err != nil {
		return queue.ScheduleDef{}, time.Time{}, err
	}
	return Prepare(d, maxBody, now)
}

// CheckActor validates who is acting: audit rows keep at most
// queue.MaxNameLength bytes.
func CheckActor(actor string) error {
	if len(actor) > queue.MaxNameLength {
		return &queue.ValidationError{Field: "actor", Reason: fmt.Sprintf("is longer than %d bytes", queue.MaxNameLength)}
	}
	return nil
}

// Replace writes def as the schedule's new definition and nextFire as its
// next fire time, with an audit row of u (u.Action, u.Describe, u.Actor),
// only if the stored schedule is still at cur.Version; it reports whether it
// wrote.
type Replace func(ctx context.Context, cur *queue.Schedule, def queue.ScheduleDef, nextFire time.Time, u queue.ScheduleUpdate) (bool, error)

// Update is ScheduleStore.UpdateSchedule for every dialect: it reads the
// schedule with get, applies u, checks the result with Prepare, and writes it
// with replace, reading again when a fire or another change got in between.
//
// The next fire time changes only with when the schedule fires: a new cron
// or time zone, or a resume, make it the first fire time after now (and
// after the latest one handled); a pause clears it. Anything else keeps it,
// so an edit of the body does not drop a fire that is due.
func Update(ctx context.Context, name string, u queue.ScheduleUpdate, maxBody int, now func() time.Time,
	get func(context.Context, string) (*queue.Schedule, error), replace Replace) (*queue.Schedule, error) {
	if err := queue.CheckScheduleName("name", name); err != nil {
		return nil, err
	}
	if err := CheckActor(u.Actor); err != nil {
		return nil, err
	}
	for range 20 {
		cur, err := get(ctx, name)
		if err != nil {
			return nil, err
		}
		from := now()
		if from.Before(cur.LastFireAt) {
			from = cur.LastFireAt
		}
		def, next, err := Prepare(u.Apply(cur.ScheduleDef), maxBody, from)
		if err != nil {
			return nil, err
		}
		timing := def.Cron != cur.Cron || def.TimeZone != cur.TimeZone || def.Paused != cur.Paused
		if !timing {
			next = cur.NextFireAt
		}
		ok, err := replace(ctx, cur, def, next, u)
		if err != nil {
			return nil, err
		}
		if ok {
			return get(ctx, name)
		}
	}
	return nil, fmt.Errorf("updating schedule %s: it kept changing while this update was made; try again", name)
}
