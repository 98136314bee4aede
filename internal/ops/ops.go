// Package ops is what an operator does to the queue: enqueue, cancel, retry,
// change a queue's settings, set a group's limit, create, change, run and
// delete schedules. The JSON API and the dashboard's forms both call it, so
// each operation (its validation, its store calls, its effect on this node's
// workers and scheduler, its time limit) exists once.
//
// Every operation records who did it (the actor) and is bounded by Timeout.
package ops

import (
	"context"
	"time"

	"readpast/internal/queue"
	"readpast/internal/schedule"
)

// Timeout bounds the store calls made for one request: an operation bounds its
// own, and the handlers bound their reads with Bound. A store that does not
// answer in time gives context.DeadlineExceeded (503), never a request that
// hangs as long as the client waits.
const Timeout = 10 * time.Second

// Bound returns ctx limited to Timeout (or to its own deadline when sooner).
func Bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, Timeout)
}

// Node is this process's worker node, as the operations steer it.
type Node interface {
	// Wake makes an idle worker of the queue claim at once (after an enqueue,
	// a retry, a resumed or grown queue).
	Wake(queue string)
	// CancelTask stops the task's statement if it runs here; the cancel is
	// already recorded in the store.
	CancelTask(id int64) bool
}

// Scheduler is this process's schedule.Scheduler, as the operations steer it.
type Scheduler interface {
	// Wake makes it look at the schedules now, after a change made here
	// (other nodes see it at their next poll).
	Wake()
}

// Deps is what the operations act on.
type Deps struct {
	Store     queue.Store
	Node      Node      // nil: no workers in this process
	Scheduler Scheduler // nil: no scheduler in this process
	// MaxBodyBytes is the store's body limit (0: queue.DefaultMaxBodyBytes),
	// for the checks of a schedule's definition, made before the store is
	// called (and for its preview, made without it).
	MaxBodyBytes int
	// Lease is the nodes' lease: a node silent for longer is gone, and the
	// targets only it serves are served by no node (0: 30s).
	Lease time.Duration
}

// Ops performs the operations on a store and this node.
type Ops struct {
	store     queue.Store
	node      Node
	sched     Scheduler
	schedules schedule.Editor // holds the body limit too
	lease     time.Duration
	bulkWake  chan struct{} // StartBulk wakes RunBulks
}

// New returns the operations on d.Store.
func New(d Deps) *Ops {
	if d.Lease <= 0 {
		d.Lease = 30 * time.Second
	}
	return &Ops{store: d.Store, node: d.Node, sched: d.Scheduler, lease: d.Lease,
		schedules: schedule.Editor{Store: d.Store, MaxBodyBytes: d.MaxBodyBytes, Resolve: FanOutResolver(d.Store, d.Lease)}, bulkWake: make(chan struct{}, 1)}
}

// wake tells this node's idle workers of the queue about new work.
func (o *Ops) wake(queueName string) {
	if o.node != nil {
		o.node.Wake(queueName)
	}
}

// wakeScheduler makes this node's scheduler look at the schedules now.
func (o *Ops) wakeScheduler() {
	if o.sched != nil {
		o.sched.Wake()
	}
}
