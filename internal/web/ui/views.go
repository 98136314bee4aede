package ui

import (
	"log/slog"
	"time"

	"readpast/internal/ops"
	"readpast/internal/queue"
	"readpast/internal/target"
	"readpast/internal/workers"
)

// Node is this process's worker node, as the dashboard shows it.
type Node interface {
	ID() string
	Snapshot() workers.NodeInfo
}

// views reads and lays out what the pages show. The pages and the live hub
// share it (the hub repeats a page's reads each tick), so neither knows the
// other.
type views struct {
	store      queue.Store
	node       Node // nil: no workers in this process
	log        *slog.Logger
	goneAfter  time.Duration
	throughput *throughput
	now        func() time.Time
	// targets are this node's targets, for their sessions' activity
	// (targets.go); nil: none.
	targets *target.Set
	// ops reads the cluster's targets for a task's wait (nil: none).
	ops *ops.Ops
}

func newViews(store queue.Store, node Node, lease time.Duration, log *slog.Logger) *views {
	if lease <= 0 {
		lease = 30 * time.Second
	}
	return &views{store: store, node: node, log: log, goneAfter: lease, throughput: newThroughput(store), now: time.Now}
}
