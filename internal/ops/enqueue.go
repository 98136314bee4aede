package ops

import (
	"context"

	"readpast/internal/queue"
)

// Enqueue writes the tasks in one transaction, all or none, recorded as
// created by actor, and wakes this node's idle workers of each queue. It
// answers what became of each task, in order (queue.Store.Enqueue).
func (o *Ops) Enqueue(ctx context.Context, actor string, tasks []queue.NewTask) ([]queue.Enqueued, error) {
	ctx, cancel := Bound(ctx)
	defer cancel()
	tasks = append([]queue.NewTask(nil), tasks...) // the caller's slice stays as given
	var named []string
	for i := range tasks {
		tasks[i].CreatedBy = actor
		if tasks[i].Target != "" {
			named = append(named, tasks[i].Target)
		}
	}
	if len(named) > 0 {
		if err := o.checkTargets(ctx, "target", named); err != nil {
			return nil, err
		}
	}
	res, err := o.store.Enqueue(ctx, tasks)
	if err != nil {
		return nil, err
	}
	woken := map[string]bool{}
	for _, t := range tasks {
		q := t.Queue
		if q == "" {
			q = queue.DefaultQueue
		}
		if !woken[q] {
			woken[q] = true
			o.wake(q)
		}
	}
	return res, nil
}

// checkTargets refuses target names no node of the cluster has configured
// (CheckTargets); names not fit to be names are left to queue.Checked.
func (o *Ops) checkTargets(ctx context.Context, field string, names []string) error {
	var valid []string
	for _, n := range names {
		if queue.CheckTargetName(field, n) == nil {
			valid = append(valid, n)
		}
	}
	if len(valid) == 0 {
		return nil
	}
	known, err := o.Targets(ctx)
	if err != nil {
		return err
	}
	return CheckTargets(field, valid, known)
}
