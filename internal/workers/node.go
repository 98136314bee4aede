package workers

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"readpast/internal/logs"
	"readpast/internal/queue"
	"readpast/internal/target"
)

// Store is what a node needs of the queue store: all of it.
type Store = queue.Store

// Node is this process's set of pools, one per queue, and the background
// components that serve them, each in a file of its own: the finisher
// (finisher.go), the heartbeater (heartbeat.go), the fence (fence.go), the reclaimer (reclaim.go),
// the settings watcher (settings.go), the listener (listen.go) and the
// retention purge (retention.go). Node.Run starts and stops them in order.
type Node struct {
	cfg   Config
	store Store
	log   *slog.Logger
	ready chan struct{} // closed once the node registered and read its settings

	pools       *poolSet
	finisher    *finisher
	heartbeater *heartbeater
	fence       *fence
	settings    *settingsWatcher
	reclaimer   *reclaimer
	listener    *listener
	retention   *retention
}

// New checks the config and returns a node; Run starts it.
func New(store Store, tgt target.Target, cfg Config) (*Node, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	log := cfg.Logger.With("node", cfg.NodeID)
	storeTimeout := cfg.heartbeatEvery()
	fin := newFinisher(store, cfg.Lease, cfg.Observer, log)
	fin.stats = cfg.Stats
	set := cfg.Targets
	if set == nil {
		set = target.Single(tgt, cfg.TargetIsStore)
	}
	exec := &executor{store: store, targets: newTargetRouter(set, cfg.TargetIsStore), nodeID: cfg.NodeID,
		storeTimeout: storeTimeout, observer: cfg.Observer, log: log, resultRows: newResultRows()}
	// The fence holds where writers run side by side (fence.go).
	fenced := store.Capabilities().ConcurrentWriters
	var fc *fence
	deps := poolDeps{store: store, exec: exec, finisher: fin, nodeID: cfg.NodeID, poll: cfg.Poll,
		lease: cfg.Lease, aheadFor: cfg.AheadFor, aheadWait: cfg.AheadWait, maxEnding: fin.maxEnding(),
		mayClaim: func() bool { return fc.open() }, observer: cfg.Observer, stats: cfg.Stats, log: log}
	if fenced {
		deps.claimTimeout = cfg.Lease - cfg.fenceMargin()
	}
	pools := newPoolSet(deps)
	fc = newFence(pools, cfg, fenced, log)
	n := &Node{cfg: cfg, store: store, log: log, ready: make(chan struct{}), pools: pools, finisher: fin, fence: fc}
	n.heartbeater = &heartbeater{store: store, pools: pools, fence: fc, nodeID: cfg.NodeID, lease: cfg.Lease,
		interval: cfg.heartbeatEvery(), info: n.info, register: n.register, log: log}
	n.settings = &settingsWatcher{store: store, interval: cfg.SettingsEvery, defaultWorkers: *cfg.DefaultWorkers,
		apply: pools.configure, setDefault: exec.targets.setDefault, setResultRows: exec.resultRows.set, log: log}
	n.reclaimer = &reclaimer{store: store, interval: cfg.ReclaimEvery, wake: pools.wakeAll, log: log}
	if cfg.Targets != nil {
		n.reclaimer.ender, n.reclaimer.endWithin = cfg.Targets, cfg.fenceMargin()
	} else if ender, ok := tgt.(target.SessionEnder); ok {
		n.reclaimer.ender, n.reclaimer.endWithin = ender, cfg.fenceMargin()
	}
	n.listener = &listener{store: store, wake: pools.wake, log: log}
	n.retention = &retention{purge: logs.Retention{Store: store, LogAge: cfg.LogRetention, TaskAge: cfg.TaskRetention, Logger: log},
		interval: cfg.RetentionEvery, log: log}
	return n, nil
}

// register writes the node's row, started and heartbeating now: when the node
// starts, and again if retention deleted the row while the node was silent
// for longer than queue.NodesGoneKept (a machine suspended for a week).
func (n *Node) register(ctx context.Context) error {
	host, _ := os.Hostname()
	return n.store.RegisterNode(ctx, queue.Node{ID: n.cfg.NodeID, Hostname: host, PID: os.Getpid(), Version: n.cfg.Version, Info: n.info()})
}

// ID is the node's id.
func (n *Node) ID() string { return n.cfg.NodeID }

// Ready is closed once the node has registered and started its pools.
func (n *Node) Ready() <-chan struct{} { return n.ready }

// Run runs the node until ctx ends, then stops gracefully: no new claims,
// running tasks get the grace period to finish, the rest are cancelled and
// released so they run again elsewhere, and the node is marked stopped.
//
// The order: the finisher and the heartbeater outlive ctx, since tasks still
// end and hold leases while the node drains; the components that claim or
// start work (settings, reclaim, listener) and the retention purge stop with
// ctx.
func (n *Node) Run(ctx context.Context) error {
	sent := time.Now()
	if err := n.register(ctx); err != nil {
		return fmt.Errorf("registering node: %w", err)
	}
	n.fence.answered(sent) // the store answered: the node may claim
	untilDrained := context.WithoutCancel(ctx)
	// Executions outlive ctx: drain stops them when the grace runs out.
	execCtx, stopExec := context.WithCancelCause(untilDrained)
	defer stopExec(nil)
	n.finisher.Start(untilDrained)
	n.heartbeater.Start(untilDrained)
	n.fence.Start(untilDrained)

	n.pools.open(ctx, execCtx)
	n.settings.refresh(ctx)
	close(n.ready)
	withCtx := []component{n.settings, n.reclaimer, n.listener, n.retention}
	for _, c := range withCtx {
		c.Start(ctx)
	}
	n.log.Info("node started", "lease", n.cfg.Lease, "poll", n.cfg.Poll, "default_workers", *n.cfg.DefaultWorkers)

	<-ctx.Done()
	for _, c := range withCtx {
		c.Stop() // no pool is made or woken from now on
	}
	n.drain(stopExec)
	n.finisher.Stop()
	n.heartbeater.Stop()
	n.fence.Stop()
	stopCtx, cancel := context.WithTimeout(untilDrained, 5*time.Second)
	defer cancel()
	if err := n.store.StopNode(stopCtx, n.cfg.NodeID); err != nil {
		n.log.Warn("marking node stopped", "err", err)
	}
	n.log.Info("node stopped")
	return nil
}

// drain waits, up to the grace period, for the pools to stop: each has stopped
// claiming with ctx, and stops once every task it claimed ended and its end is
// written. The heartbeater keeps their leases alive meanwhile. When the grace
// runs out it cancels what still runs: those executions release their tasks.
func (n *Node) drain(stopExec context.CancelCauseFunc) {
	done := n.pools.done()
	if running := n.pools.running(); running > 0 {
		n.log.Info("waiting for running tasks", "count", running, "grace", n.cfg.Grace)
	}
	grace := time.NewTimer(n.cfg.Grace)
	defer grace.Stop()
	select {
	case <-done:
	case <-grace.C:
		n.log.Warn("grace period over; cancelling and releasing running tasks", "count", n.pools.running())
		stopExec(errShutdown)
		<-done
	}
}

// Wake tells the queue's pool that a task was enqueued, so an idle worker
// claims it at once instead of at the next poll.
func (n *Node) Wake(queueName string) { n.pools.wake(queueName) }

// CancelTask stops the task if it runs on this node (the operator's cancel has
// already been recorded in the store); it reports whether it was here.
func (n *Node) CancelTask(id int64) bool { return n.pools.cancel(id, errCancelled) }
