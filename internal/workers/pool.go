package workers

import (
	"context"
	"fmt"
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
// leased and heartbeated here, in ending. At most size tasks may wait so, which
// bounds what a slow store can pile up: then the pool stops claiming.
type pool struct {
	n    *Node
	name string
	wake chan struct{} // a slot freed, an enqueue happened, or the settings changed

	mu      sync.Mutex
	size    int
	paused  bool
	running map[int64]*execution
	ending  map[int64]*execution // bodies ended, end not yet recorded
	slots   []bool               // worker slot i busy; names workers "<queue>-w<i>"
}

func newPool(n *Node, name string) *pool {
	return &pool{n: n, name: name, wake: make(chan struct{}, 1), running: map[int64]*execution{}, ending: map[int64]*execution{}}
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
// that is down.
func (p *pool) produce(ctx context.Context, execCtx context.Context, wg *sync.WaitGroup) {
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		wait := p.n.cfg.Poll
		if free := p.free(); free > 0 {
			began := time.Now()
			tasks, err := p.n.store.Claim(ctx, queue.ClaimParams{Queue: p.name, Owner: p.n.cfg.NodeID + "/" + p.name,
				Limit: min(free, queue.MaxClaimLimit), LeaseDuration: p.n.cfg.Lease})
			p.n.cfg.Observer.Claimed(p.name, len(tasks), time.Since(began), err)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				backoff = min(max(backoff*2, 250*time.Millisecond), 30*time.Second)
				wait = backoff
				p.n.log.Warn("claim failed; backing off", "queue", p.name, "retry_in", backoff, "err", err)
			} else {
				backoff = 0
				for _, t := range tasks {
					p.start(execCtx, t, wg)
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
}

// start runs one claimed task in its own goroutine, in a free worker slot.
func (p *pool) start(execCtx context.Context, t *queue.Task, wg *sync.WaitGroup) {
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
	wg.Add(1)
	go func() {
		defer wg.Done()
		// free gives the slot back; an ended task that awaits its record moves to
		// ending first, before the finisher can have written it.
		free := func(awaitingRecord bool) {
			p.mu.Lock()
			delete(p.running, t.ID)
			if awaitingRecord {
				p.ending[t.ID] = e
			}
			p.slots[slot] = false
			p.mu.Unlock()
		}
		if !p.n.run(ctx, e, func() { free(true) }, p.ended) {
			free(false)
		}
		cancel(nil)
		p.poke()
	}()
}

// ended is told by the finisher that the end of e was recorded (or given up).
func (p *pool) ended(e *execution) {
	p.mu.Lock()
	delete(p.ending, e.task.ID)
	p.mu.Unlock()
	p.poke() // a full ending set may have held claims back
}

// executions returns a snapshot of what runs now.
func (p *pool) executions() []*execution {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*execution, 0, len(p.running))
	for _, e := range p.running {
		out = append(out, e)
	}
	return out
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
	for _, e := range p.ending {
		out = append(out, e.task.Lease())
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
