package workers

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"readpast/internal/queue"
)

// poolSet is the node's pools, one per queue, made as the settings name the
// queues; the heartbeater, the reclaimer, the listener and the dashboard reach
// the pools through it.
type poolSet struct {
	deps poolDeps

	mu                sync.Mutex
	byName            map[string]*pool
	claimCtx, execCtx context.Context // set by open; nil before: no pool is made
	producers         sync.WaitGroup
}

func newPoolSet(d poolDeps) *poolSet { return &poolSet{deps: d, byName: map[string]*pool{}} }

// open lets pools be made: their producers claim until claimCtx ends and their
// executions run until execCtx ends.
func (s *poolSet) open(claimCtx, execCtx context.Context) {
	s.mu.Lock()
	s.claimCtx, s.execCtx = claimCtx, execCtx
	s.mu.Unlock()
}

// configure applies a queue's settings to its pool, making and starting the
// pool if the queue is new; before open, or once claiming stopped, it makes none.
func (s *poolSet) configure(name string, size int, paused bool) {
	s.mu.Lock()
	p := s.byName[name]
	if p == nil {
		if s.claimCtx == nil || s.claimCtx.Err() != nil {
			s.mu.Unlock()
			return
		}
		p = newPool(s.deps, name)
		s.byName[name] = p
		s.producers.Add(1)
		go func(claimCtx, execCtx context.Context) {
			defer s.producers.Done()
			p.produce(claimCtx, execCtx)
		}(s.claimCtx, s.execCtx)
	}
	s.mu.Unlock()
	p.configure(size, paused)
}

// done is closed once every producer has returned: claiming stopped, and every
// task claimed on this node ended with its end written (or given up).
func (s *poolSet) done() <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		s.producers.Wait()
		close(ch)
	}()
	return ch
}

// list returns the pools.
func (s *poolSet) list() []*pool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Collect(maps.Values(s.byName))
}

// wake makes the queue's pool claim at once, if the node has one.
func (s *poolSet) wake(name string) {
	s.mu.Lock()
	p := s.byName[name]
	s.mu.Unlock()
	if p != nil {
		p.poke()
	}
}

// wakeAll makes every pool claim at once.
func (s *poolSet) wakeAll() {
	for _, p := range s.list() {
		p.poke()
	}
}

// leases returns every lease the node holds.
func (s *poolSet) leases() []queue.Lease {
	var out []queue.Lease
	for _, p := range s.list() {
		out = append(out, p.leases()...)
	}
	return out
}

// cancel stops task id with cause if it runs on this node, and says whether it did.
func (s *poolSet) cancel(id int64, cause error) bool {
	for _, p := range s.list() {
		if p.cancelTask(id, cause) {
			return true
		}
	}
	return false
}

// renewed records that the store renewed leases, less those it reported
// lost, in a heartbeat the node sent at sent.
func (s *poolSet) renewed(leases []queue.Lease, lost []int64, sent time.Time) {
	gone := make(map[int64]bool, len(lost))
	for _, id := range lost {
		gone[id] = true
	}
	held := make(map[queue.Lease]bool, len(leases))
	for _, l := range leases {
		if !gone[l.TaskID] {
			held[l] = true
		}
	}
	for _, p := range s.list() {
		p.renewed(held, sent)
	}
}

// stop stops the tasks among ids that run on this node, with cause.
func (s *poolSet) stop(ids []int64, cause error) {
	for _, id := range ids {
		s.cancel(id, cause)
	}
}

// running counts the bodies running on this node.
func (s *poolSet) running() int {
	n := 0
	for _, p := range s.list() {
		n += len(p.executions())
	}
	return n
}
