package ops

import (
	"context"

	"readpast/internal/queue"
)

// Cancel cancels a pending task at once. For a running task the store records
// the request and, when it runs on this node, its statement is stopped now
// (other nodes stop theirs at their next heartbeat). It returns the task's
// state afterwards: running means the cancellation was requested.
func (o *Ops) Cancel(ctx context.Context, actor string, id int64) (queue.State, error) {
	ctx, cancel := Bound(ctx)
	defer cancel()
	st, err := o.store.Cancel(ctx, id, actor)
	if err != nil {
		return "", err
	}
	if st == queue.StateRunning && o.node != nil {
		o.node.CancelTask(id)
	}
	return st, nil
}

// Retry puts a failed or cancelled task back to pending now with a fresh
// attempt budget, wakes this node's workers of its queue, and returns it.
func (o *Ops) Retry(ctx context.Context, actor string, id int64) (*queue.Task, error) {
	ctx, cancel := Bound(ctx)
	defer cancel()
	if err := o.store.Retry(ctx, id, actor); err != nil {
		return nil, err
	}
	t, err := o.store.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	o.wake(t.Queue)
	return t, nil
}
