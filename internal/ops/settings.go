package ops

import (
	"context"
	"fmt"

	"readpast/internal/queue"
)

// UpdateQueue changes a queue's settings (creating the queue if needed); every
// node applies them within a second, and this node's workers of the queue are
// woken at once (a resumed or grown queue claims now). u.Actor is set to actor.
func (o *Ops) UpdateQueue(ctx context.Context, actor, name string, u queue.QueueUpdate) (*queue.Queue, error) {
	u.Actor = actor
	if err := queue.CheckQueueUpdate(name, u); err != nil {
		return nil, err
	}
	ctx, cancel := Bound(ctx)
	defer cancel()
	q, err := o.store.UpdateQueue(ctx, name, u)
	if err != nil {
		return nil, err
	}
	o.wake(name)
	return q, nil
}

// SetGroupLimit sets how many tasks of the group may run at once, cluster-wide,
// and returns the group as it is afterwards.
func (o *Ops) SetGroupLimit(ctx context.Context, actor, name string, maxRunning int) (*queue.Group, error) {
	if err := queue.CheckName("group", name); err != nil {
		return nil, err
	}
	if err := queue.CheckGroupLimit(name, maxRunning); err != nil {
		return nil, err
	}
	ctx, cancel := Bound(ctx)
	defer cancel()
	if err := o.store.SetGroupLimit(ctx, name, maxRunning, actor); err != nil {
		return nil, err
	}
	gs, err := o.store.Groups(ctx)
	if err != nil {
		return nil, err
	}
	for i := range gs {
		if gs[i].Name == name {
			return &gs[i], nil
		}
	}
	return nil, fmt.Errorf("group %s: %w after setting its limit", name, queue.ErrNotFound)
}
