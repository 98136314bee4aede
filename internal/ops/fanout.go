package ops

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"readpast/internal/queue"
)

// A fan-out (docs/TARGETS.md, "Fan-out") is one body enqueued once per
// target, the tasks grouped in a concurrency group of their own, so the
// operator sees them as one unit (the group's page lists one row per server)
// and the group's limit says how many servers run it at once.

// FanOutPrefix starts the name of every fan-out's group.
const FanOutPrefix = "fanout-"

// MaxFanOut bounds the targets of one fan-out: its page lists every task in
// one bounded read.
const MaxFanOut = 1000

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
	switch {
	case tmpl.Target != "":
		return nil, &queue.ValidationError{Field: "target", Reason: "and targets are both set: give one target, or a list of them for a fan-out"}
	case tmpl.Group != "":
		return nil, &queue.ValidationError{Field: "group", Reason: "is set on a fan-out, which is a group of its own (its limit is fanout_limit): leave it out"}
	case tmpl.Chain != "":
		return nil, &queue.ValidationError{Field: "chain", Reason: "is set on a fan-out: a fan-out's tasks run side by side, one per target; leave it out"}
	case tmpl.UniqueKey != "":
		return nil, &queue.ValidationError{Field: "unique_key", Reason: "is set on a fan-out: one key would make every task but the first a duplicate; leave it out"}
	case tmpl.Transactional:
		return nil, &queue.ValidationError{Field: "transactional", Reason: "is set on a fan-out: a transactional task runs only on the store; leave it out"}
	case limit < 0 || limit > MaxFanOut:
		return nil, &queue.ValidationError{Field: "fanout_limit", Reason: fmt.Sprintf("is %d: use 1 to %d servers at once, or leave it out for all", limit, MaxFanOut)}
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
	group, err := fanOutName()
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

// fanOutName is a new fan-out's group: fanout-<UTC time>-<random>, so the
// groups page sorts fan-outs by when they were made.
func fanOutName() (string, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return FanOutPrefix + time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:]), nil
}

// IsFanOut reports whether group is a fan-out's.
func IsFanOut(group string) bool { return strings.HasPrefix(group, FanOutPrefix) }

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
