package ops

import (
	"context"
	"fmt"

	"readpast/internal/queue"
)

// UpdateQueue changes a known queue's settings; every node applies them
// within a second, and this node's workers of the queue are woken at once (a
// resumed or grown queue claims now). u.Actor is set to actor. A name no queue
// has is queue.ErrNotFound: a URL with a mistyped name never makes a queue
// (CreateQueue does, on purpose).
func (o *Ops) UpdateQueue(ctx context.Context, actor, name string, u queue.QueueUpdate) (*queue.Queue, error) {
	return o.setQueue(ctx, actor, name, u, false)
}

// CreateQueue makes a queue with its settings (the overview's "add a queue",
// POST /api/queues). A queue of that name is queue.ErrExists.
func (o *Ops) CreateQueue(ctx context.Context, actor, name string, u queue.QueueUpdate) (*queue.Queue, error) {
	return o.setQueue(ctx, actor, name, u, true)
}

// setQueue is UpdateQueue (create false: the queue must exist) and
// CreateQueue (create true: it must not). The store's upsert does both; the
// check before it is what tells them apart.
func (o *Ops) setQueue(ctx context.Context, actor, name string, u queue.QueueUpdate, create bool) (*queue.Queue, error) {
	u.Actor = actor
	if err := queue.CheckQueueUpdate(name, u); err != nil {
		return nil, err
	}
	ctx, cancel := Bound(ctx)
	defer cancel()
	if u.DefaultTarget != nil && *u.DefaultTarget != "" {
		if err := o.checkTargets(ctx, "default_target", []string{*u.DefaultTarget}); err != nil {
			return nil, err
		}
	}
	known, err := o.queueKnown(ctx, name)
	switch {
	case err != nil:
		return nil, err
	case create && known:
		return nil, fmt.Errorf("queue %s exists already: change its settings instead: %w", name, queue.ErrExists)
	case !create && !known:
		return nil, queue.QueueUnknown(name)
	}
	q, err := o.store.UpdateQueue(ctx, name, u)
	if err != nil {
		return nil, err
	}
	o.wake(name)
	return q, nil
}

// queueKnown reports whether a queue of that name exists as the overview
// lists them (Queues: its settings, or tasks counted under its name; the
// counts read indexes and rollups, not the history).
func (o *Ops) queueKnown(ctx context.Context, name string) (bool, error) {
	qs, err := o.store.Queues(ctx)
	if err != nil {
		return false, err
	}
	for _, q := range qs {
		if q.Name == name {
			return true, nil
		}
	}
	return false, nil
}

// DeleteQueue removes a queue that holds no task (store.DeleteQueue says why
// it refuses one that does), audited with actor.
func (o *Ops) DeleteQueue(ctx context.Context, actor, name string) error {
	if err := queue.CheckQueueName("name", name); err != nil {
		return err
	}
	ctx, cancel := Bound(ctx)
	defer cancel()
	return o.store.DeleteQueue(ctx, name, actor)
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
