package schedule

import (
	"context"
	"fmt"
	"time"

	"readpast/internal/queue"
)

// Editor makes operators' changes to the schedules of a store. It decides
// and the store writes: the editor checks the definition and the actor,
// fills in the defaults and computes the next fire time, and hands the store
// values it persists as they are (queue.NewSchedule, queue.ScheduleReplace).
// So the rules exist once, whatever the dialect, and a refused change
// reaches no store.
type Editor struct {
	Store queue.ScheduleStore
	// MaxBodyBytes is the store's body limit (0: queue.DefaultMaxBodyBytes).
	MaxBodyBytes int
	// Resolve resolves the targets of a schedule that fans out for a Run
	// now, as a scheduler does at a fire time; nil: such a Run now is refused.
	Resolve Resolver
}

// CreateSchedule stores a new schedule created by actor, due at its first
// fire time after now. A bad definition gives a *queue.ValidationError naming
// the field; a taken name gives queue.ErrExists.
func (e Editor) CreateSchedule(ctx context.Context, d queue.ScheduleDef, actor string) (*queue.Schedule, error) {
	if err := checkActor(actor); err != nil {
		return nil, err
	}
	def, next, err := Prepare(d, e.MaxBodyBytes, time.Now())
	if err != nil {
		return nil, err
	}
	if err := e.Store.CreateSchedule(ctx, queue.NewSchedule{Def: def, NextFireAt: next, Actor: actor}); err != nil {
		return nil, err
	}
	return e.Store.GetSchedule(ctx, def.Name)
}

// maxReplaceTries bounds how often UpdateSchedule reads the schedule again
// after a fire or another change got in between its read and its write.
const maxReplaceTries = 20

// UpdateSchedule changes a schedule as u.Actor (pause and resume too): it
// reads the schedule, applies u, checks the result with Prepare and writes
// it only at the version read, reading again when a fire or another change
// got in between.
//
// The next fire time changes only with when the schedule fires: a new cron
// or time zone, or a resume, make it the first fire time after now (and
// after the latest one handled); a pause clears it. Anything else keeps it,
// so an edit of the body does not drop a fire that is due.
func (e Editor) UpdateSchedule(ctx context.Context, name string, u queue.ScheduleUpdate) (*queue.Schedule, error) {
	if err := queue.CheckScheduleName("name", name); err != nil {
		return nil, err
	}
	if err := checkActor(u.Actor); err != nil {
		return nil, err
	}
	for range maxReplaceTries {
		cur, err := e.Store.GetSchedule(ctx, name)
		if err != nil {
			return nil, err
		}
		from := time.Now()
		if from.Before(cur.LastFireAt) {
			from = cur.LastFireAt
		}
		def, next, err := Prepare(u.Apply(cur.ScheduleDef), e.MaxBodyBytes, from)
		if err != nil {
			return nil, err
		}
		timing := def.Cron != cur.Cron || def.TimeZone != cur.TimeZone || def.Paused != cur.Paused
		if !timing {
			next = cur.NextFireAt
		}
		ok, err := e.Store.ReplaceSchedule(ctx, queue.ScheduleReplace{ID: cur.ID, Version: cur.Version, Name: cur.Name,
			Def: def, NextFireAt: next, Actor: u.Actor, Action: u.Action(), Detail: u.Describe()})
		if err != nil {
			return nil, err
		}
		if ok {
			return e.Store.GetSchedule(ctx, name)
		}
	}
	return nil, fmt.Errorf("updating schedule %s: it kept changing while this update was made; try again", name)
}

// DeleteSchedule removes a schedule as actor; the tasks it created stay.
// queue.ErrNotFound if there is none.
func (e Editor) DeleteSchedule(ctx context.Context, name, actor string) error {
	if err := checkActor(actor); err != nil {
		return err
	}
	return e.Store.DeleteSchedule(ctx, name, actor)
}

// RunSchedule enqueues a run of the schedule now as actor (Run now), paused
// or not. Under overlap skip while the latest run is unfinished it creates
// nothing and returns that run (Duplicate).
func (e Editor) RunSchedule(ctx context.Context, name, actor string) (queue.Enqueued, error) {
	if err := checkActor(actor); err != nil {
		return queue.Enqueued{}, err
	}
	cur, err := e.Store.GetSchedule(ctx, name)
	if err != nil {
		return queue.Enqueued{}, err
	}
	var fan *queue.FanOutFire
	if cur.Job != "" {
		if fan = jobFanOut(ctx, e.Store, cur.Job, e.Resolve); fan != nil && fan.Err != nil {
			return queue.Enqueued{}, fan.Err
		}
	} else if len(cur.Task.Targets) > 0 {
		if e.Resolve == nil {
			return queue.Enqueued{}, errNoResolver
		}
		fan = queue.NewFanOutFire(cur.Task.Targets, cur.Task.FanOutLimit, time.Now(), func(sels []string) ([]string, error) {
			return e.Resolve(ctx, sels)
		})
		if fan.Err != nil {
			return queue.Enqueued{}, fan.Err
		}
	}
	return e.Store.RunSchedule(ctx, name, actor, fan)
}

// checkActor refuses an actor the audit rows cannot keep: they keep at most
// queue.MaxNameLength bytes of it.
func checkActor(actor string) error {
	if len(actor) > queue.MaxNameLength {
		return &queue.ValidationError{Field: "actor", Reason: fmt.Sprintf("is longer than %d bytes", queue.MaxNameLength)}
	}
	return nil
}
