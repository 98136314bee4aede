package ops

import (
	"context"
	"strings"
	"time"

	"readpast/internal/queue"
	"readpast/internal/schedule"
)

// Schedules (docs/SCHEDULES.md). The schedule package's Editor checks a
// definition and the actor before the store writes anything (the error names
// the field), and the store audits every change as the actor's; each
// operation then wakes this node's scheduler, so a change made here takes
// effect at once rather than at the next poll.

// UpcomingShown is how many of its next fire times a schedule is shown with,
// on the page and in the API.
const UpcomingShown = 5

// CreateSchedule stores a new schedule, due at its first fire time after now.
// A taken name gives queue.ErrExists.
func (o *Ops) CreateSchedule(ctx context.Context, actor string, d queue.ScheduleDef) (*queue.Schedule, error) {
	ctx, cancel := Bound(ctx)
	defer cancel()
	if d.Task.Target != "" {
		if err := o.checkTargets(ctx, "target", []string{d.Task.Target}); err != nil {
			return nil, err
		}
	}
	if err := o.checkNamedTargets(ctx, d.Task.Targets); err != nil {
		return nil, err
	}
	s, err := o.schedules.CreateSchedule(ctx, d, actor)
	if err != nil {
		return nil, err
	}
	o.wakeScheduler()
	return s, nil
}

// UpdateSchedule changes a schedule: its definition, or pauses or resumes it
// (u.Paused). u.Actor is set to actor.
func (o *Ops) UpdateSchedule(ctx context.Context, actor, name string, u queue.ScheduleUpdate) (*queue.Schedule, error) {
	u.Actor = actor
	ctx, cancel := Bound(ctx)
	defer cancel()
	if u.Target != nil && *u.Target != "" {
		if err := o.checkTargets(ctx, "target", []string{*u.Target}); err != nil {
			return nil, err
		}
	}
	if u.Targets != nil {
		if err := o.checkNamedTargets(ctx, *u.Targets); err != nil {
			return nil, err
		}
	}
	s, err := o.schedules.UpdateSchedule(ctx, name, u)
	if err != nil {
		return nil, err
	}
	o.wakeScheduler()
	return s, nil
}

// checkNamedTargets refuses a fan-out's target names that no node knows, as
// a schedule's one target is refused; its tags are not checked: they resolve
// at each fire time, and a tag no node has yet may be configured by then.
func (o *Ops) checkNamedTargets(ctx context.Context, selectors []string) error {
	var names []string
	for _, s := range selectors {
		if !strings.HasPrefix(s, queue.TagPrefix) && queue.CheckTargetName("targets", s) == nil {
			names = append(names, s)
		}
	}
	if len(names) == 0 {
		return nil
	}
	return o.checkTargets(ctx, "targets", names)
}

// DeleteSchedule removes a schedule; the tasks it created stay.
func (o *Ops) DeleteSchedule(ctx context.Context, actor, name string) error {
	ctx, cancel := Bound(ctx)
	defer cancel()
	return o.schedules.DeleteSchedule(ctx, name, actor)
}

// RunSchedule enqueues a run of the schedule now (Run now), paused or not,
// and returns its task. Under overlap skip while the latest run is
// unfinished it creates nothing and returns that run, duplicate true.
func (o *Ops) RunSchedule(ctx context.Context, actor, name string) (t *queue.Task, duplicate bool, err error) {
	ctx, cancel := Bound(ctx)
	defer cancel()
	res, err := o.schedules.RunSchedule(ctx, name, actor)
	if err != nil {
		return nil, false, err
	}
	if t, err = o.store.Get(ctx, res.ID); err != nil {
		return nil, false, err
	}
	if !res.Duplicate {
		o.wake(t.Queue)
		o.wakeScheduler()
	}
	return t, res.Duplicate, nil
}

// PreviewSchedule checks d as CreateSchedule would, writing nothing, and
// returns its first n fire times after now, in its zone (whether or not d is
// paused): what the schedule form shows before it is saved.
func (o *Ops) PreviewSchedule(d queue.ScheduleDef, now time.Time, n int) ([]time.Time, error) {
	d.Paused = false
	def, next, err := schedule.Prepare(d, o.schedules.MaxBodyBytes, now)
	if err != nil {
		return nil, err
	}
	return fireTimes(def.Cron, def.TimeZone, next, n), nil
}

// UpcomingFires returns up to n fire times of s, in its zone, from the next
// one the schedulers will handle (even when it is due already) on; none while
// s is paused. It reads nothing: a list of schedules costs no query more.
func UpcomingFires(s *queue.Schedule, n int) []time.Time {
	return fireTimes(s.Cron, s.TimeZone, s.NextFireAt, n)
}

// fireTimes is first and the fire times after it, n in all, in the zone; none
// when first is zero.
func fireTimes(cron, zone string, first time.Time, n int) []time.Time {
	if first.IsZero() || n < 1 {
		return nil
	}
	spec, err := schedule.Parse(cron, zone)
	if err != nil {
		return nil // a stored definition was checked when it was saved
	}
	first = first.In(spec.Location())
	return append([]time.Time{first}, spec.NextN(first, n-1)...)
}
