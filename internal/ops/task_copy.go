package ops

import (
	"context"
	"fmt"

	"readpast/internal/queue"
)

// CopyOf is the task t again, as a new task to enqueue: its queue, body,
// priority, group, attempts budget, timeout, transactional flag, unique key
// and name. Not its chain: a copy runs on its own, since its chain's stages have
// run (or been cancelled) already. The enqueue form's "clone and edit" and
// Requeue start from it.
func CopyOf(t *queue.Task) queue.NewTask {
	prio := t.Priority
	return queue.NewTask{Queue: t.Queue, Body: t.Body, Priority: &prio, Group: t.Group, MaxAttempts: t.MaxAttempts,
		Timeout: t.Timeout, Transactional: t.Transactional, UniqueKey: t.UniqueKey, Name: t.Name}
}

// Requeue enqueues a finished task (succeeded too) again as a new task
// (CopyOf), created by actor, and returns what became of it; the finished
// task stays as it was. An unfinished task is refused: it will run, or runs.
func (o *Ops) Requeue(ctx context.Context, actor string, id int64) (queue.Enqueued, error) {
	bctx, cancel := Bound(ctx)
	t, err := o.store.Get(bctx, id)
	cancel()
	if err != nil {
		return queue.Enqueued{}, err
	}
	if !t.State.Finished() {
		return queue.Enqueued{}, fmt.Errorf("%w: task %d is %s; only a finished task can be requeued (retry puts a failed or cancelled one back itself)",
			queue.ErrInvalidState, id, t.State)
	}
	res, err := o.Enqueue(ctx, actor, []queue.NewTask{CopyOf(t)})
	if err != nil {
		return queue.Enqueued{}, err
	}
	return res[0], nil
}

// DeleteTask deletes a finished task and its execution-log rows, audited as
// actor's.
func (o *Ops) DeleteTask(ctx context.Context, actor string, id int64) error {
	ctx, cancel := Bound(ctx)
	defer cancel()
	return o.store.DeleteTask(ctx, id, actor)
}
