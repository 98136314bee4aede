package ops

import (
	"context"
	"fmt"
	"time"

	"readpast/internal/queue"
)

// A fan-out (docs/TARGETS.md, "Fan-out") is one body enqueued once per
// target, the tasks grouped in a concurrency group of their own, so the
// operator sees them as one unit (the group's page lists one row per server)
// and the group's limit says how many servers run it at once.

// FanOutPrefix starts the name of every fan-out's group.
const FanOutPrefix = queue.FanOutPrefix

// MaxFanOut bounds the targets of one fan-out: its page lists every task in
// one bounded read.
const MaxFanOut = queue.MaxFanOut

// FanOut is what an enqueue to many targets made.
type FanOut struct {
	Group   string
	Targets []string
	Tasks   []queue.Enqueued // in Targets order
}

// EnqueueFanOut enqueues tmpl once per target the selectors name, in one
// transaction, grouped as one fan-out of which at most limit run at once (0:
// all of them).
func (o *Ops) EnqueueFanOut(ctx context.Context, actor string, tmpl queue.NewTask, selectors []string, limit int) (*FanOut, error) {
	if err := queue.CheckFanOutTask(tmpl, limit); err != nil {
		return nil, err
	}
	known, err := o.Targets(ctx)
	if err != nil {
		return nil, err
	}
	names, err := Expand(selectors, known)
	if err != nil {
		return nil, err
	}
	if len(names) > MaxFanOut {
		return nil, &queue.ValidationError{Field: "targets", Reason: fmt.Sprintf("names %d targets: a fan-out reaches at most %d", len(names), MaxFanOut)}
	}
	if limit == 0 || limit > len(names) {
		limit = len(names)
	}
	group, err := queue.NewFanOutGroup(time.Now())
	if err != nil {
		return nil, err
	}
	tasks := make([]queue.NewTask, len(names))
	for i, n := range names {
		t := tmpl
		t.Target, t.Group = n, group
		tasks[i] = t
	}
	// Checked before the group is made: a bad body leaves nothing behind.
	if _, err := queue.NormalizeAll(tasks, 0); err != nil {
		return nil, err
	}
	if _, err := o.SetGroupLimit(ctx, actor, group, limit); err != nil {
		return nil, err
	}
	res, err := o.Enqueue(ctx, actor, tasks)
	if err != nil {
		return nil, err
	}
	return &FanOut{Group: group, Targets: names, Tasks: res}, nil
}

// IsFanOut reports whether group is a fan-out's.
func IsFanOut(group string) bool { return queue.IsFanOutGroup(group) }

// FanOutResolver resolves fan-out selectors as POST /api/tasks does, among
// the targets the nodes of s publish (a node silent for longer than lease is
// gone): what a scheduler resolves a schedule's targets with at its fire
// times (docs/SCHEDULES.md, "Fan-out").
func FanOutResolver(s queue.Store, lease time.Duration) func(ctx context.Context, selectors []string) ([]string, error) {
	return func(ctx context.Context, selectors []string) ([]string, error) {
		ctx, cancel := Bound(ctx)
		defer cancel()
		known, err := ClusterTargets(ctx, s, lease)
		if err != nil {
			return nil, err
		}
		return Expand(selectors, known)
	}
}

// FanOutTasks lists a fan-out's tasks, newest first: one read of at most
// MaxFanOut rows of the group's index.
func (o *Ops) FanOutTasks(ctx context.Context, group string) ([]*queue.Task, error) {
	ctx, cancel := Bound(ctx)
	defer cancel()
	return o.store.List(ctx, queue.ListParams{Group: group, Limit: MaxFanOut})
}

// RetryFailed retries every failed or cancelled task of a fan-out, as actor,
// and says how many it put back.
func (o *Ops) RetryFailed(ctx context.Context, actor, group string) (int, error) {
	if !IsFanOut(group) {
		return 0, &queue.ValidationError{Field: "group", Reason: fmt.Sprintf("%q is not a fan-out's group", group)}
	}
	tasks, err := o.FanOutTasks(ctx, group)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, t := range tasks {
		if t.State != queue.StateFailed && t.State != queue.StateCancelled {
			continue
		}
		if _, err := o.Retry(ctx, actor, t.ID); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
