package ops

import (
	"context"
	"fmt"

	"readpast/internal/jobs"
	"readpast/internal/queue"
)

// Jobs (docs/JOBS.md). The jobs package checks and compiles a definition
// before the store writes anything, and the store audits every change as
// the actor's.

func (o *Ops) jobs() jobs.Editor {
	return jobs.Editor{Store: o.store, MaxBodyBytes: o.schedules.MaxBodyBytes, Resolve: o.schedules.Resolve}
}

// CreateJob stores a new job; warnings are what its flow allows but is likely
// a mistake (a step nothing reaches). A taken name gives queue.ErrExists.
func (o *Ops) CreateJob(ctx context.Context, actor string, d jobs.Definition) (*queue.Job, []string, error) {
	ctx, cancel := Bound(ctx)
	defer cancel()
	if err := o.checkStepTargets(ctx, d); err != nil {
		return nil, nil, err
	}
	return o.jobs().Create(ctx, d, actor)
}

// CreateJobFromJSON creates a job from the JSON of POST /api/jobs, enabled
// or not whatever the document says: what `readpast import-agent` calls
// with each job it read from msdb (enabled false, so it does not run beside
// the Agent it came from).
func (o *Ops) CreateJobFromJSON(ctx context.Context, actor string, body []byte, enabled bool) (*queue.Job, []string, error) {
	d, err := jobs.ParseDocument(body, enabled)
	if err != nil {
		return nil, nil, err
	}
	return o.CreateJob(ctx, actor, d)
}

// ReplaceJob writes d over the job of its name; runs under way keep the plan
// they started with.
func (o *Ops) ReplaceJob(ctx context.Context, actor string, d jobs.Definition) (*queue.Job, []string, error) {
	ctx, cancel := Bound(ctx)
	defer cancel()
	if err := o.checkStepTargets(ctx, d); err != nil {
		return nil, nil, err
	}
	return o.jobs().Replace(ctx, d, actor)
}

// checkStepTargets refuses a step whose target no node of the cluster has
// configured, as an enqueue refuses a task's (checkTargets).
func (o *Ops) checkStepTargets(ctx context.Context, d jobs.Definition) error {
	for i, st := range d.Steps {
		if err := o.checkTargets(ctx, fmt.Sprintf("steps[%d].target", i), []string{st.Target}); err != nil {
			return err
		}
	}
	return nil
}

// DeleteJob removes a job; its runs stay in the history.
func (o *Ops) DeleteJob(ctx context.Context, actor, name string) error {
	ctx, cancel := Bound(ctx)
	defer cancel()
	return o.jobs().Delete(ctx, name, actor)
}

// RunJob starts a run of the job now, from the step named from ("": the
// first), and wakes this node's workers of its queue. Under overlap skip
// while a run is unfinished it starts nothing and returns that run
// (Duplicate).
func (o *Ops) RunJob(ctx context.Context, actor, name, from string) (queue.RunStarted, error) {
	ctx, cancel := Bound(ctx)
	defer cancel()
	r, err := o.jobs().Run(ctx, name, from, actor)
	if err != nil || r.Duplicate {
		return r, err
	}
	if j, err := o.store.GetJob(ctx, name); err == nil {
		o.wake(j.Queue)
	}
	return r, nil
}

// CancelRun cancels a running run: its current step is cancelled (stopped
// here at once when this node runs it) and nothing more runs.
func (o *Ops) CancelRun(ctx context.Context, actor string, id int64) (*queue.Run, error) {
	ctx, cancel := Bound(ctx)
	defer cancel()
	if _, err := o.jobs().Cancel(ctx, id, actor); err != nil {
		return nil, err
	}
	run, err := o.store.GetRun(ctx, id)
	if err != nil {
		return nil, err
	}
	if o.node != nil {
		o.node.CancelTask(run.CurrentTaskID)
	}
	return run, nil
}
