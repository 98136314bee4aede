package workers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"readpast/internal/queue"
)

// pool runs up to size executions of one queue. Its producer claims, in one
// round trip, as many tasks as it has free slots, and while the queue has a
// backlog also the tasks that will start within aheadFor (River's workers
// wait for a connection the same way): such a task is claimed ahead and waits
// in queued, in claim order, for the next free slot, so a slot that frees
// starts its next body at once instead of a claim's round trip later, and a
// claim takes a batch worth its round trip. How far ahead follows how long
// the pool's bodies take (ahead): none for long bodies, which would hold
// claimed tasks that another node could run. A task that waits longer than
// aheadWait (Config.AheadWait), or whose queue is paused, is given back
// (released) unstarted.
//
// A slot is free again as soon as its body has ended on the target; the end is
// recorded by the node's finisher in a batch commit that the slot does not wait
// for (River completes jobs the same way). Until that commit the task stays
// leased and heartbeated here, in ending; the finisher says which leases it
// wrote (written). A pool stops claiming while maxEnding of its ends await
// their record (finisher.maxEnding), which bounds what a slow store can pile
// up.
type pool struct {
	poolDeps
	name string
	wake chan struct{} // a slot freed, an end was written, an enqueue happened, or the settings changed

	mu      sync.Mutex
	size    int
	paused  bool
	running map[int64]*execution     // claimed here, not ended: bodies running, and the queued
	queued  []*execution             // claimed ahead, waiting for a slot, in claim order
	ending  map[queue.Lease]struct{} // bodies ended, end not yet recorded
	slots   []bool                   // worker slot i busy; names workers "<queue>-w<i>"
	bodies  int                      // executions holding a slot
	backlog bool                     // the last claim got all it asked for: the queue has more
	bodyAvg time.Duration            // moving average of the bodies' run time; 0 before the first
	clock   slotClock                // idle slot time, with stats on
	execs   sync.WaitGroup           // the executions' goroutines
}

const (
	// aheadPerSlot bounds the tasks claimed ahead, per slot: 32, so that
	// behind bodies of a millisecond or less a claim takes hundreds of tasks,
	// as River's fetch takes up to its free workers: a drain makes a sixth as
	// many claims, each a commit and a scan of the ready index's head
	// (docs/benchmarks/river.md, "Larger claims and finishes": four a slot gave
	// claims of about 145 and cost the server a sixth more per task).
	aheadPerSlot = 32
)

// poolDeps is what every pool of a node shares.
type poolDeps struct {
	store    Store
	exec     *executor
	finisher *finisher
	nodeID   string
	poll     time.Duration
	lease    time.Duration
	// aheadFor: while the queue has a backlog, the pool claims the tasks its
	// slots will start within this time, by the average body, at most
	// aheadPerSlot per slot.
	aheadFor time.Duration
	// aheadWait: a task claimed ahead that has not started by then is given
	// back, so a run of long bodies cannot hold it from other nodes.
	aheadWait time.Duration
	// maxEnding: a pool whose ended tasks awaiting their record reach this
	// many claims nothing until the finisher catches up (finisher.maxEnding).
	maxEnding int
	// mayClaim says whether the node may take leases now: not while the
	// fence holds it (fence.open), since it could not renew them; nil: always.
	mayClaim func() bool
	// claimTimeout bounds a claim, 0 none: with the fence on, a claim
	// answered after lease - margin would be fenced at once, and one sent
	// into a blackhole would otherwise wait forever.
	claimTimeout time.Duration
	observer     Observer
	stats        *DrainStats // nil: not counted
	log          *slog.Logger
}

func newPool(d poolDeps, name string) *pool {
	return &pool{poolDeps: d, name: name, wake: make(chan struct{}, 1),
		running: map[int64]*execution{}, ending: map[queue.Lease]struct{}{}}
}

func (p *pool) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// configure applies queue settings; growing or resuming starts queued tasks
// and claims at once, pausing gives the queued back.
func (p *pool) configure(size int, paused bool) {
	p.mu.Lock()
	p.tickLocked()
	changed := size != p.size || paused != p.paused
	p.size, p.paused = size, paused
	if p.stoppedLocked() {
		p.giveBackLocked(errPaused)
	}
	p.grantLocked()
	p.mu.Unlock()
	if changed {
		p.poke()
	}
}

// stoppedLocked says the queue runs nothing new here: paused, or no workers.
func (p *pool) stoppedLocked() bool { return p.paused || p.size == 0 }

// free counts the tasks a claim may take now: a task for every slot no body
// holds and no queued task will take, and while the queue has a backlog, the
// tasks the slots will start within aheadFor, at most aheadPerSlot a slot and
// at most maxEnding in all; none while the queue runs nothing new here or
// maxEnding of its ends await their record.
//
// The bound of maxEnding keeps what a pool holds ahead to what its store
// records in two finish batches: a store that records ends slowly (SQL
// Server's, one transaction each) gains nothing from a long queue of tasks
// claimed ahead, which another node could run and every heartbeat extends.
func (p *pool) free() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stats != nil {
		p.tickLocked()
		p.clock.holding = len(p.ending) >= p.maxEnding
	}
	if p.stoppedLocked() || len(p.ending) >= p.maxEnding || (p.mayClaim != nil && !p.mayClaim()) {
		return 0
	}
	ahead := 0
	if p.backlog && p.bodyAvg > 0 {
		ahead = int(min(int64(aheadPerSlot*p.size), int64(p.maxEnding),
			int64(p.size)*int64(p.aheadFor)/int64(p.bodyAvg)))
	}
	return max(0, p.size+ahead-len(p.running))
}

// stopAheadLocked makes the pool claim nothing ahead until shorter bodies
// bring the average down again: it sets the average past the point where
// aheadFor covers one task for the pool's slots, with a margin of two, so
// about five short bodies start claiming ahead again.
func (p *pool) stopAheadLocked() {
	p.bodyAvg = max(p.bodyAvg, 2*time.Duration(max(p.size, 1))*p.aheadFor)
}

// bodyTookLocked adds a body's run time to the moving average (an eighth).
func (p *pool) bodyTookLocked(took time.Duration) {
	if p.bodyAvg == 0 {
		p.bodyAvg = took
		return
	}
	p.bodyAvg += (took - p.bodyAvg) / 8
}

// freeSlotLocked gives e's slot back.
func (p *pool) freeSlotLocked(e *execution) {
	p.tickLocked()
	p.slots[e.slot] = false
	p.bodies--
	e.slot = -1
}

// grantLocked gives free slots to queued tasks, in claim order.
func (p *pool) grantLocked() {
	if len(p.queued) > 0 {
		p.tickLocked()
	}
	for len(p.queued) > 0 && !p.stoppedLocked() && p.bodies < p.size {
		e := p.queued[0]
		p.queued[0] = nil
		p.queued = p.queued[1:]
		p.bodies++
		slot := 0
		for slot < len(p.slots) && p.slots[slot] {
			slot++
		}
		if slot == len(p.slots) {
			p.slots = append(p.slots, true)
		}
		p.slots[slot] = true
		e.slot, e.worker, e.started = slot, fmt.Sprintf("%s-w%d", p.name, slot), time.Now()
		close(e.granted)
	}
}

// giveBackLocked stops every queued task with cause: each is released
// unstarted (executor.unstarted).
func (p *pool) giveBackLocked(cause error) {
	for _, e := range p.queued {
		e.cancel(cause)
	}
}

// produce claims while ctx lives. A claim that got every task it asked for
// (free) is followed by another as soon as there is room again; an empty or
// partial claim waits for a wake-up (local enqueue, NOTIFY, settings change)
// or the poll interval; a store error backs off up to 30 s, so a node does
// not hammer a database that is down. Once ctx ends it claims nothing more, gives back what is
// queued, and returns when every task it claimed has ended and its end is
// written (or given up): the node's drain waits for that, and cancels the
// executions when the grace runs out.
func (p *pool) produce(ctx, execCtx context.Context) {
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		wait := p.poll
		if free := p.free(); free > 0 {
			began := time.Now() // before the request: the leases end no earlier than began + lease
			limit := min(free, queue.MaxClaimLimit)
			p.claiming(true)
			tasks, err := p.claim(ctx, limit)
			took := time.Since(began)
			p.observer.Claimed(p.name, len(tasks), took, err)
			p.mu.Lock()
			p.backlog = err == nil && len(tasks) == limit
			if p.stats != nil {
				p.tickLocked()
				p.clock.claiming = false
				p.stats.Claims.Add(1)
				p.stats.ClaimedTasks.Add(int64(len(tasks)))
				p.stats.ClaimTime.Add(int64(took))
			}
			p.mu.Unlock()
			if err != nil {
				if ctx.Err() != nil {
					break
				}
				backoff = min(max(backoff*2, 250*time.Millisecond), 30*time.Second)
				wait = backoff
				p.log.Warn("claim failed; backing off", "queue", p.name, "retry_in", backoff, "err", err)
			} else {
				backoff = 0
				for _, t := range tasks {
					p.start(execCtx, t, began)
				}
				if len(tasks) == limit {
					continue // there may be more; the next claim finds out when slots free
				}
			}
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-p.wake:
		case <-timer.C:
		}
		timer.Stop()
	}
	p.mu.Lock()
	p.giveBackLocked(errShutdown)
	p.mu.Unlock()
	for p.outstanding() > 0 {
		<-p.wake // an end written pokes
	}
	p.execs.Wait()
}

// claiming tells the slot clock that a claim is in flight.
func (p *pool) claiming(on bool) {
	if p.stats == nil {
		return
	}
	p.mu.Lock()
	p.tickLocked()
	p.clock.claiming = on
	p.mu.Unlock()
}

// claim asks the store for up to limit tasks, within claimTimeout.
func (p *pool) claim(ctx context.Context, limit int) ([]*queue.Task, error) {
	if p.claimTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.claimTimeout)
		defer cancel()
	}
	return p.store.Claim(ctx, queue.ClaimParams{Queue: p.name, Owner: p.nodeID + "/" + p.name,
		Limit: limit, LeaseDuration: p.lease, Targets: p.exec.targets.claimTargets(p.name)})
}

// written forgets ends the finisher wrote (or gave up), and wakes the
// producer: a full ending set may have held claims back, and a stopping pool
// waits for its last end.
func (p *pool) written(leases []queue.Lease) {
	p.mu.Lock()
	for _, l := range leases {
		delete(p.ending, l)
	}
	p.mu.Unlock()
	p.poke()
}

// outstanding counts the tasks claimed here whose end is not written yet.
func (p *pool) outstanding() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.running) + len(p.ending)
}

// start queues one claimed task for a slot, and runs it in its own goroutine
// once it has one; claimed is when the claim was sent, the lease's first
// renewal for the fence.
func (p *pool) start(execCtx context.Context, t *queue.Task, claimed time.Time) {
	ctx, cancel := context.WithCancelCause(execCtx)
	e := &execution{task: t, slot: -1, granted: make(chan struct{}), cancel: cancel, renewed: claimed}
	p.mu.Lock()
	p.tickLocked()
	p.running[t.ID] = e
	p.queued = append(p.queued, e)
	if p.stoppedLocked() { // paused or stopped while the claim was in flight
		e.cancel(errPaused)
	}
	p.grantLocked()
	p.mu.Unlock()
	p.execs.Add(1)
	go p.execute(ctx, e)
}

// execute waits for the task's slot, runs its body, and hands its end to the
// finisher; a task stopped or given back before it had a slot ends unstarted.
func (p *pool) execute(ctx context.Context, e *execution) {
	defer p.execs.Done()
	var (
		a               queue.Attempt
		release, record bool
	)
	var ran time.Time // the body's end, counted with stats on
	if p.await(ctx, e) {
		if p.stats == nil {
			a, release, record = p.exec.run(ctx, e)
		} else {
			began := time.Now()
			a, release, record = p.exec.run(ctx, e)
			ran = time.Now()
			p.stats.Scheduling.Add(int64(began.Sub(e.started)))
			p.stats.Body.Add(int64(ran.Sub(began)))
			p.stats.Bodies.Add(1)
		}
	} else {
		a, release, record = p.exec.unstarted(ctx, e)
	}
	// The slot is free once the body ended; an end that awaits its record
	// moves to ending first, before the finisher can have written it.
	p.mu.Lock()
	if !ran.IsZero() {
		p.stats.After.Add(int64(time.Since(ran)))
	}
	delete(p.running, e.task.ID)
	if record {
		p.ending[a.Lease] = struct{}{}
	}
	if e.slot >= 0 {
		p.freeSlotLocked(e)
		p.bodyTookLocked(time.Since(e.started))
	}
	p.grantLocked()
	p.mu.Unlock()
	if record {
		p.finisher.submit(a, release, p)
	}
	e.cancel(nil)
	p.poke()
}

// await waits until the task has a slot (true), or it is stopped or waited
// aheadWait for one (false: it leaves with its cause, its body unstarted).
func (p *pool) await(ctx context.Context, e *execution) bool {
	select {
	case <-e.granted:
		if ctx.Err() == nil {
			return true
		}
	default:
		stale := time.NewTimer(p.aheadWait)
		select {
		case <-e.granted:
		case <-ctx.Done():
		case <-stale.C:
			e.cancel(errGivenBack)
		}
		stale.Stop()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-e.granted:
		if ctx.Err() == nil {
			return true
		}
		// Stopped as it got its slot (given back at shutdown, say): the slot
		// goes to the next, the body does not start.
		p.freeSlotLocked(e)
		return false
	default:
	}
	p.tickLocked()
	p.queued = slices.DeleteFunc(p.queued, func(q *execution) bool { return q == e })
	if errors.Is(context.Cause(ctx), errGivenBack) {
		// The bodies take longer than the average said (a run of long ones
		// began): claim nothing ahead until shorter ones bring it down again,
		// so a pool does not claim and give back the same tasks every second.
		p.stopAheadLocked()
	}
	return false
}

// executions returns a snapshot of what runs now.
func (p *pool) executions() []*execution {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*execution, 0, p.bodies)
	for _, e := range p.running {
		if e.slot >= 0 {
			out = append(out, e)
		}
	}
	return out
}

// held returns the executions claimed here and not ended: bodies running and
// tasks claimed ahead.
func (p *pool) held() []*execution {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*execution, 0, len(p.running))
	for _, e := range p.running {
		out = append(out, e)
	}
	return out
}

// renewed records that the store renewed leases in a heartbeat sent at sent.
func (p *pool) renewed(leases map[queue.Lease]bool, sent time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.running {
		if leases[e.task.Lease()] {
			e.renew(sent)
		}
	}
}

// leases returns every lease the pool holds: running bodies, tasks claimed
// ahead, and ended ones whose end is not recorded yet.
func (p *pool) leases() []queue.Lease {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]queue.Lease, 0, len(p.running)+len(p.ending))
	for _, e := range p.running {
		out = append(out, e.task.Lease())
	}
	for l := range p.ending {
		out = append(out, l)
	}
	return out
}

// cancelTask stops a task running here with the given cause; false if it is not here.
func (p *pool) cancelTask(id int64, cause error) bool {
	p.mu.Lock()
	e := p.running[id]
	p.mu.Unlock()
	if e == nil {
		return false
	}
	e.cancel(cause)
	return true
}
