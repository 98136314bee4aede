package workers

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"readpast/internal/queue"
	"readpast/internal/target"
)

// Store is what a node needs of the queue store: all of it.
type Store = queue.Store

// Node is this process's set of pools, one per queue.
type Node struct {
	cfg    Config
	store  Store
	target target.Target
	log    *slog.Logger

	finisher *finisher

	mu    sync.Mutex
	pools map[string]*pool
	ready chan struct{} // closed once the node registered and read its settings
}

// New checks the config and returns a node; Run starts it.
func New(store Store, tgt target.Target, cfg Config) (*Node, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, store: store, target: tgt, log: cfg.Logger.With("node", cfg.NodeID),
		pools: map[string]*pool{}, ready: make(chan struct{})}
	n.finisher = newFinisher(n)
	return n, nil
}

// ID is the node's id.
func (n *Node) ID() string { return n.cfg.NodeID }

// Ready is closed once the node has registered and started its pools.
func (n *Node) Ready() <-chan struct{} { return n.ready }

// Run runs the node until ctx ends, then stops gracefully: no new claims,
// running tasks get the grace period to finish, the rest are cancelled and
// released so they run again elsewhere, and the node is marked stopped.
func (n *Node) Run(ctx context.Context) error {
	host, _ := os.Hostname()
	if err := n.store.RegisterNode(ctx, queue.Node{ID: n.cfg.NodeID, Hostname: host, PID: os.Getpid(), Version: n.cfg.Version}); err != nil {
		return fmt.Errorf("registering node: %w", err)
	}
	// Executions outlive ctx: they are stopped by the grace logic below.
	execCtx, stopExec := context.WithCancelCause(context.WithoutCancel(ctx))
	defer stopExec(nil)
	var loops, execs sync.WaitGroup
	// The finisher outlives the executions it serves: it stops after drain.
	finCtx, stopFinisher := context.WithCancel(context.WithoutCancel(ctx))
	finDone := make(chan struct{})
	go func() { defer close(finDone); n.finisher.run(finCtx) }()
	n.refreshSettings(ctx, execCtx, &loops, &execs)
	close(n.ready)
	n.every(ctx, &loops, n.cfg.SettingsEvery, func() { n.refreshSettings(ctx, execCtx, &loops, &execs) })
	n.every(ctx, &loops, n.cfg.heartbeatEvery(), func() { n.heartbeat(execCtx) })
	n.every(ctx, &loops, n.cfg.ReclaimEvery, func() { n.reclaim(ctx) })
	if n.store.Capabilities().Listen {
		loops.Add(1)
		go func() {
			defer loops.Done()
			if err := n.store.Listen(ctx, n.Wake); err != nil && ctx.Err() == nil {
				n.log.Warn("listening for enqueues stopped; polling only", "err", err)
			}
		}()
	}
	n.log.Info("node started", "lease", n.cfg.Lease, "poll", n.cfg.Poll, "default_workers", n.cfg.DefaultWorkers)

	<-ctx.Done()
	loops.Wait() // producers stopped: nothing new is claimed
	n.drain(execCtx, stopExec, &execs)
	stopFinisher()
	<-finDone
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := n.store.StopNode(stopCtx, n.cfg.NodeID); err != nil {
		n.log.Warn("marking node stopped", "err", err)
	}
	n.log.Info("node stopped")
	return nil
}

// drain waits for running tasks up to the grace period, keeping their leases
// alive, then cancels what is left; cancelled executions release their tasks.
func (n *Node) drain(execCtx context.Context, stopExec context.CancelCauseFunc, execs *sync.WaitGroup) {
	done := make(chan struct{})
	go func() { execs.Wait(); close(done) }()
	if len(n.executions()) > 0 {
		n.log.Info("waiting for running tasks", "count", len(n.executions()), "grace", n.cfg.Grace)
	}
	grace := time.NewTimer(n.cfg.Grace)
	defer grace.Stop()
	beat := time.NewTicker(n.cfg.heartbeatEvery())
	defer beat.Stop()
	for {
		select {
		case <-done:
			return
		case <-beat.C:
			n.heartbeat(execCtx)
		case <-grace.C:
			n.log.Warn("grace period over; cancelling and releasing running tasks", "count", len(n.executions()))
			stopExec(errShutdown)
			<-done
			return
		}
	}
}

// every calls fn each interval until ctx ends.
func (n *Node) every(ctx context.Context, wg *sync.WaitGroup, interval time.Duration, fn func()) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				fn()
			}
		}
	}()
}

// Wake tells the queue's pool that a task was enqueued, so an idle worker
// claims it at once instead of at the next poll.
func (n *Node) Wake(queueName string) {
	n.mu.Lock()
	p := n.pools[queueName]
	n.mu.Unlock()
	if p != nil {
		p.poke()
	}
}

// CancelTask stops the task if it runs on this node (the operator's cancel has
// already been recorded in the store); it reports whether it was here.
func (n *Node) CancelTask(id int64) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, p := range n.pools {
		if p.cancelTask(id, errCancelled) {
			return true
		}
	}
	return false
}

// refreshSettings starts pools for new queues and applies workers and paused.
func (n *Node) refreshSettings(ctx, execCtx context.Context, loops, execs *sync.WaitGroup) {
	qs, err := n.store.QueueSettings(ctx)
	if err != nil {
		if ctx.Err() == nil {
			n.log.Warn("reading queue settings", "err", err)
		}
		return
	}
	for _, q := range qs {
		size := n.cfg.DefaultWorkers
		if q.Workers != nil {
			size = *q.Workers
		}
		n.mu.Lock()
		p := n.pools[q.Name]
		if p == nil {
			p = newPool(n, q.Name)
			n.pools[q.Name] = p
			loops.Add(1)
			go func() { defer loops.Done(); p.produce(ctx, execCtx, execs) }()
		}
		n.mu.Unlock()
		p.configure(size, q.Paused)
	}
}

func (n *Node) executions() []*execution {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []*execution
	for _, p := range n.pools {
		out = append(out, p.executions()...)
	}
	return out
}

// heartbeat extends every lease this node holds in one call, stops executions
// whose lease was lost or whose cancellation was requested, and refreshes the
// node's own row.
func (n *Node) heartbeat(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, n.cfg.heartbeatEvery())
	defer cancel()
	var leases []queue.Lease
	n.mu.Lock()
	for _, p := range n.pools {
		leases = append(leases, p.leases()...)
	}
	n.mu.Unlock()
	if len(leases) > 0 {
		res, err := n.store.Heartbeat(ctx, leases, n.cfg.Lease)
		if err != nil {
			n.log.Warn("heartbeating leases", "count", len(leases), "err", err)
		} else {
			n.stop(res.Lost, errLeaseLost)
			n.stop(res.CancelRequested, errCancelled)
		}
	}
	if err := n.store.HeartbeatNode(ctx, n.cfg.NodeID, n.info()); err != nil {
		n.log.Warn("heartbeating node", "err", err)
	}
}

func (n *Node) stop(ids []int64, cause error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, id := range ids {
		for _, p := range n.pools {
			if p.cancelTask(id, cause) {
				break
			}
		}
	}
}

// reclaim takes back tasks whose lease ran out on any node.
func (n *Node) reclaim(ctx context.Context) {
	res, err := n.store.ReclaimExpired(ctx, 100)
	if err != nil {
		if ctx.Err() == nil {
			n.log.Warn("reclaiming expired leases", "err", err)
		}
		return
	}
	for _, r := range res {
		n.log.Info("reclaimed a task whose lease expired", "task", r.TaskID, "state", r.State)
	}
	if len(res) > 0 {
		n.mu.Lock()
		for _, p := range n.pools {
			p.poke()
		}
		n.mu.Unlock()
	}
}
