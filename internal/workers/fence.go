package workers

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// fence stops this node's bodies before the store can hand their tasks to
// another node (issue 25). A lease the store granted or extended ends no
// earlier than lease after the request was sent: the store stamps it with its
// own clock, after the request left. So the node keeps, for each task it
// holds, the time it sent the last claim or heartbeat of that lease the store
// answered, on its own monotonic clock, and once lease - margin has passed
// since then without a newer answer it cancels the execution, as a timeout
// does: the statement is cancelled on the target, a body not started yet
// never starts, and the node claims nothing until a heartbeat is answered
// again. A node cut off from its store while its target still answers
// therefore stops its copies before another node may start its own.
//
// The margin (fenceMargin, a quarter of the lease) is the time the stop has
// to take effect on the target: the watchdog's tick, the cancel request's
// round trip to the target, a loaded machine's scheduling. The heartbeat
// comes every quarter of the lease (heartbeatEvery), so a node fences only
// when the beats sent at a quarter and at half the lease both failed: a store
// that stops answering for under half a lease fences nothing.
//
// The fence holds on stores whose writers run side by side (PostgreSQL, SQL
// Server), reached over a network. On SQLite a transactional body holds the
// one writer, so no heartbeat can be written while it runs, and lease time
// stops meanwhile (docs/WORKERS.md): fencing there would stop the very body
// that holds the writer, and every other of the node, with no other node able
// to take them over anyway.
type fence struct {
	lifecycle
	pools  *poolSet
	within time.Duration // lease - margin: how long after its last renewal a lease is trusted
	tick   time.Duration
	log    *slog.Logger

	mu     sync.Mutex
	lastOK time.Time // when the node sent the last heartbeat (or registration) the store answered; monotonic
	on     bool      // false on one-writer stores: nothing is fenced
}

func newFence(pools *poolSet, cfg Config, on bool, log *slog.Logger) *fence {
	margin := cfg.fenceMargin()
	return &fence{pools: pools, within: cfg.Lease - margin, tick: min(max(margin/10, 10*time.Millisecond), time.Second),
		log: log, on: on}
}

// Start checks every tick until ctx ends or Stop; on a store where the fence
// does not hold it starts nothing.
func (f *fence) Start(ctx context.Context) {
	if !f.on {
		return
	}
	f.start(ctx, func(ctx context.Context) { every(ctx, f.tick, false, f.check) })
}

// answered records that the store answered a heartbeat the node sent at sent.
func (f *fence) answered(sent time.Time) {
	f.mu.Lock()
	if sent.After(f.lastOK) {
		f.lastOK = sent
	}
	f.mu.Unlock()
}

// open says whether the node may claim: the store answered a heartbeat sent
// within lease - margin. A node that cannot renew leases takes none.
func (f *fence) open() bool {
	if !f.on {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return time.Since(f.lastOK) < f.within
}

// check stops every execution whose lease was last renewed too long ago.
func (f *fence) check(context.Context) {
	for _, p := range f.pools.list() {
		for _, e := range p.held() {
			if since := time.Since(e.renewedAt()); since >= f.within && e.fence() {
				f.log.Warn("stopped a task whose lease this node could not renew in time: the store has not answered "+
					"its heartbeats, and another node may take the task over once the lease ends",
					"task", e.task.ID, "since_renewed", since.Round(time.Millisecond), "lease_trusted_for", f.within)
			}
		}
	}
}
