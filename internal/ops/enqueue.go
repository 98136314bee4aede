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
	for i := range tasks {
		tasks[i].CreatedBy = actor
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
