package workers

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"readpast/internal/queue"
)

// pool runs up to size executions of one queue. Its producer claims as many
// tasks as it has free slots, in one round trip, so a worker never fetches work
// it cannot start.
//
// A slot is free again as soon as its body has ended on the target; the end is
// recorded by the node's finisher in a batch commit that the slot does not wait
// for (River completes jobs the same way). Until that commit the task stays
// leased and heartbeated here, in ending; the finisher says which leases it
// wrote (written). At most size tasks may wait so, which bounds
// what a slow store can pile up: then the pool stops claiming.
type pool struct {
	poolDeps
	name string
	wake chan struct{} // a slot freed, an end was written, an enqueue happened, or the settings changed

	mu      sync.Mutex
	size    int
	paused  bool
	running map[int64]*execution
	ending  map[queue.Lease]struct{} // bodies ended, end not yet recorded
	slots   []bool                   // worker slot i busy; names workers "<queue>-w<i>"
	execs   sync.WaitGroup           // the executions' goroutines
}

// poolDeps is what every pool of a node shares.
type poolDeps struct {
	store    Store
	exec     *executor
	finisher *finisher
	nodeID   string
	poll     time.Duration
	lease    time.Duration
	observer Observer
	log      *slog.Logger
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

// configure applies queue settings; growing or resuming claims at once.
func (p *pool) configure(size int, paused bool) {
	p.mu.Lock()
	changed := size != p.size || paused != p.paused
	p.size, p.paused = size, paused
	p.mu.Unlock()
	if changed {
		p.poke()
	}
}

func (p *pool) free() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused {
		return 0
	}
	return max(0, min(p.size-len(p.running), 2*p.size-len(p.running)-len(p.ending)))
}

// produce claims while ctx lives. A claim that filled every free slot is
// followed by another as soon as a slot frees; an empty or partial claim waits
// for a wake-up (local enqueue, NOTIFY, settings change) or the poll interval;
// a store error backs off up to 30 s, so a node does not hammer a database
// that is down. Once ctx ends it claims nothing more and returns when every
// task it claimed has ended and its end is written (or given up): the node's
// drain waits for that, and cancels the executions when the grace runs out.
func (p *pool) produce(ctx, execCtx context.Context) {
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		wait := p.poll
		if free := p.free(); free > 0 {
			began := time.Now()
			tasks, err := p.store.Claim(ctx, queue.ClaimParams{Queue: p.name, Owner: p.nodeID + "/" + p.name,
				Limit: min(free, queue.MaxClaimLimit), LeaseDuration: p.lease})
			p.observer.Claimed(p.name, len(tasks), time.Since(began), err)
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
					p.start(execCtx, t)
				}
				if len(tasks) == free {
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
	for p.outstanding() > 0 {
		<-p.wake // an end written pokes
	}
	p.execs.Wait()
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

// start runs one claimed task in its own goroutine, in a free worker slot.
func (p *pool) start(execCtx context.Context, t *queue.Task) {
	ctx, cancel := context.WithCancelCause(execCtx)
	e := &execution{task: t, started: time.Now(), cancel: cancel}
	p.mu.Lock()
	slot := 0
	for slot < len(p.slots) && p.slots[slot] {
		slot++
	}
	if slot == len(p.slots) {
		p.slots = append(p.slots, true)
	}
	p.slots[slot] = true
	e.worker = fmt.Sprintf("%s-w%d", p.name, slot)
	p.running[t.ID] = e
	p.mu.Unlock()
	p.execs.Add(1)
	go func() {
		defer p.execs.Done()
		a, release, record := p.exec.run(ctx, e)
		// The slot is free once the body ended; an end that awaits its record
		// moves to ending first, before the finisher can have written it.
		p.mu.Lock()
		delete(p.running, t.ID)
		if record {
			p.ending[a.Lease] = struct{}{}
		}
		p.slots[slot] = false
		p.mu.Unlock()
		if record {
			p.finisher.submit(a, release, p)
		}
		cancel(nil)
		p.poke()
	}()
}

// executions returns a snapshot of what runs now.
func (p *pool) executions() []*execution {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Collect(maps.Values(p.running))
}

// leases returns every lease the pool holds: running bodies and ended ones
// whose end is not recorded yet.
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
