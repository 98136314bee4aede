package schedule

import (
	"context"
	"errors"
	"time"

	"readpast/internal/queue"
)

// checkFanOut checks the fan-out of a schedule's template, task being the
// template as Normalize made it: selectors that can be names or tags, and
// nothing a fan-out refuses (docs/SCHEDULES.md, "Fan-out"). A job's schedule
// starts runs of its job, whose steps name their own targets.
func checkFanOut(d queue.ScheduleDef, task queue.NewTask) error {
	if len(d.Task.Targets) == 0 {
		if d.Task.FanOutLimit != 0 {
			return &queue.ValidationError{Field: "fanout_limit", Reason: "is set without targets: it limits a fan-out; give targets or leave it out"}
		}
		return nil
	}
	if d.Job != "" {
		return &queue.ValidationError{Field: "targets", Reason: "is set on a job's schedule: the job's steps name their targets; leave it out"}
	}
	if err := queue.CheckSelectors("targets", d.Task.Targets, queue.MaxScheduleSelectors); err != nil {
		return err
	}
	return queue.CheckFanOutTask(task, d.Task.FanOutLimit)
}

// Resolver matches a fan-out's selectors (names and "tag:NAME") to the names
// of the targets the live nodes publish; cmd/web wires the directory that
// POST /api/tasks resolves against.
type Resolver func(ctx context.Context, selectors []string) ([]string, error)

// fanOut is the fan-out of due schedule d at time at, nil when it has no
// targets: resolved now, by this node, so a tag means the targets tagged so
// when the fire time comes.
func (s *Scheduler) fanOut(ctx context.Context, d queue.DueSchedule, at time.Time) *queue.FanOutFire {
	if len(d.Targets) == 0 {
		return nil
	}
	return queue.NewFanOutFire(d.Targets, d.FanOutLimit, at, func(sels []string) ([]string, error) {
		if s.cfg.Resolve == nil {
			return nil, errNoResolver
		}
		return s.cfg.Resolve(ctx, sels)
	})
}

var errNoResolver = errors.New("this node's scheduler cannot resolve targets (no directory of targets wired)")

// jobFanOut resolves, with resolve, the targets of the steps that fan out of
// job (docs/JOBS.md, "A step that fans out") for the run a fire or a Run now
// of its schedule starts: a run's steps are enqueued inside other tasks'
// ends, so their tags are resolved when it starts, by the node starting it.
// Nil when no step fans out.
func jobFanOut(ctx context.Context, store queue.ScheduleStore, job string, resolve Resolver) *queue.FanOutFire {
	js, ok := store.(interface {
		GetJob(ctx context.Context, name string) (*queue.Job, error)
	})
	if !ok {
		return nil
	}
	j, err := js.GetJob(ctx, job)
	if err != nil {
		return &queue.FanOutFire{Err: err}
	}
	steps, err := queue.ResolveRunTargets(ctx, j.Steps, resolve)
	if steps == nil && err == nil {
		return nil
	}
	return &queue.FanOutFire{Steps: steps, Err: err}
}
