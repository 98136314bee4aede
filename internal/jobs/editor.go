package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"readpast/internal/queue"
)

// Editor makes operators' changes to the jobs of a store: it checks and
// compiles, and the store writes.
type Editor struct {
	Store Store
	// MaxBodyBytes is the store's body limit (0: queue.DefaultMaxBodyBytes).
	MaxBodyBytes int
	// Resolve resolves the targets of a step that fans out when a run
	// starts (ops.FanOutResolver); nil: a run of such a job is refused.
	Resolve func(ctx context.Context, selectors []string) ([]string, error)
}

// Store is what the editor writes: the job and its schedules (schedules of
// the schedule model whose fires start a run of the job).
type Store interface {
	queue.JobStore
	queue.ScheduleStore
}

// Create stores a new job defined by d, owned by actor, and returns the
// warnings its flow has.
func (e Editor) Create(ctx context.Context, d Definition, actor string) (*queue.Job, []string, error) {
	if err := checkActor(actor); err != nil {
		return nil, nil, err
	}
	j, warnings, err := Compile(d, actor, e.MaxBodyBytes)
	if err != nil {
		return nil, nil, err
	}
	if err := e.Store.CreateJob(ctx, j); err != nil {
		return nil, nil, err
	}
	if err := e.createSchedules(ctx, d, j, actor); err != nil {
		// Not half a job: the job goes again (its schedules with it).
		if derr := e.Store.DeleteJob(context.WithoutCancel(ctx), j.Name, actor); derr != nil {
			return nil, nil, errors.Join(err, derr)
		}
		return nil, nil, err
	}
	got, err := e.Store.GetJob(ctx, j.Name)
	return got, warnings, err
}

// createSchedules stores the schedules of d, as the job j has them.
func (e Editor) createSchedules(ctx context.Context, d Definition, j queue.NewJob, actor string) error {
	for i := range d.Schedules {
		def, next, err := Schedule(d, i, j.Overlap, j.Enabled, time.Now())
		if err != nil {
			return err
		}
		if err := e.Store.CreateSchedule(ctx, queue.NewSchedule{Def: def, NextFireAt: next, Actor: actor}); err != nil {
			if errors.Is(err, queue.ErrExists) {
				return fmt.Errorf("the job's schedule %d would be named %s, and a schedule of that name exists: rename or delete it: %w", i+1, def.Name, err)
			}
			return err
		}
	}
	return nil
}

// deleteSchedules removes the schedules a job's stored definition has.
func (e Editor) deleteSchedules(ctx context.Context, old *queue.Job, actor string) error {
	d, err := DefinitionOf(old)
	if err != nil {
		return err
	}
	for i := range d.Schedules {
		if err := e.Store.DeleteSchedule(ctx, ScheduleName(old.Name, i), actor); err != nil && !errors.Is(err, queue.ErrNotFound) {
			return err
		}
	}
	return nil
}

// CreateFromJSON creates a job from the JSON body of POST /api/jobs, enabled
// or not whatever the document says (an import makes its jobs paused, so
// they do not run beside the Agent they came from).
func (e Editor) CreateFromJSON(ctx context.Context, body []byte, enabled bool, actor string) (*queue.Job, []string, error) {
	d, err := ParseDocument(body, enabled)
	if err != nil {
		return nil, nil, err
	}
	return e.Create(ctx, d, actor)
}

// Replace writes d over the job of its name; runs under way keep their plan.
func (e Editor) Replace(ctx context.Context, d Definition, actor string) (*queue.Job, []string, error) {
	if err := checkActor(actor); err != nil {
		return nil, nil, err
	}
	old, err := e.Store.GetJob(ctx, d.Name)
	if err != nil {
		return nil, nil, err
	}
	j, warnings, err := Compile(d, old.Owner, e.MaxBodyBytes)
	if err != nil {
		return nil, nil, err
	}
	j.Actor = actor
	if err := e.Store.ReplaceJob(ctx, j); err != nil {
		return nil, nil, err
	}
	if err := e.deleteSchedules(ctx, old, actor); err != nil {
		return nil, nil, err
	}
	if err := e.createSchedules(ctx, d, j, actor); err != nil {
		return nil, nil, err
	}
	got, err := e.Store.GetJob(ctx, j.Name)
	return got, warnings, err
}

// Definition reads a stored job's definition back.
func DefinitionOf(j *queue.Job) (Definition, error) {
	d, err := Parse([]byte(j.Definition))
	if err != nil {
		return Definition{}, fmt.Errorf("job %s: its stored definition cannot be read: %w", j.Name, err)
	}
	e := j.Enabled
	d.Enabled = &e
	return d, nil
}

// Run starts a run of job name now, as actor, from the step named from ("":
// the first). A disabled job runs too (Agent's Start Job at Step does). While
// the job has an unfinished run and its overlap is skip, it starts nothing
// and returns that run with Duplicate.
func (e Editor) Run(ctx context.Context, name, from, actor string) (queue.RunStarted, error) {
	if err := checkActor(actor); err != nil {
		return queue.RunStarted{}, err
	}
	r := queue.StartRun{Job: name, Trigger: queue.TriggerRunNow, Actor: actor}
	j, err := e.Store.GetJob(ctx, name)
	if err != nil {
		return queue.RunStarted{}, err
	}
	if from != "" {
		if r.From, err = StepIndex(j.Steps, from); err != nil {
			return queue.RunStarted{}, err
		}
		r.Trigger = queue.TriggerFromStep
	}
	if r.Targets, err = e.runTargets(ctx, j.Steps); err != nil {
		return queue.RunStarted{}, err
	}
	return e.Store.StartRun(ctx, r)
}

// Cancel cancels a running run as actor.
func (e Editor) Cancel(ctx context.Context, id int64, actor string) (queue.RunState, error) {
	if err := checkActor(actor); err != nil {
		return "", err
	}
	return e.Store.CancelRun(ctx, id, actor)
}

// Delete removes a job as actor; its runs stay in the history.
func (e Editor) Delete(ctx context.Context, name, actor string) error {
	if err := checkActor(actor); err != nil {
		return err
	}
	return e.Store.DeleteJob(ctx, name, actor)
}

func checkActor(actor string) error {
	if actor == "" {
		return errors.New("jobs: a change needs the operator who makes it")
	}
	return queue.CheckName("actor", actor)
}
