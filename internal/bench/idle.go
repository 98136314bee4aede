package bench

import (
	"context"
	"fmt"
	"time"

	"readpast/internal/queue"
	"readpast/internal/workers"
)

// IdleResult is what an idle node sends to the database.
type IdleResult struct {
	Queues           int     `json:"queues"`
	Seconds          float64 `json:"seconds"`
	QueriesPerSec    float64 `json:"queries_per_sec"`
	PerQueuePerSec   float64 `json:"queries_per_sec_per_queue"`
	PollSeconds      float64 `json:"poll_seconds"`
	HeartbeatSeconds float64 `json:"heartbeat_seconds"`
}

// idle counts every store call an idle node makes with default settings.
func idle(ctx context.Context, c Config) (*IdleResult, error) {
	names := []string{"bench-idle-1", "bench-idle-2", "bench-idle-3"}
	for _, q := range names {
		if _, err := c.Store.UpdateQueue(ctx, q, queue.QueueUpdate{Workers: ptr(4), Actor: "bench"}); err != nil {
			return nil, err
		}
	}
	// The wrapper keeps PostgreSQL's LISTEN connection (Store.Listen), so this is
	// the node as it runs in production.
	cc := c
	var counted *workers.StoreCalls
	cc.Store, counted = workers.CountCalls(c.Store)
	_, stop, err := startNodes(cc, 1, workers.Config{})
	if err != nil {
		return nil, err
	}
	defer stop()
	time.Sleep(time.Second)
	// Queues other than ours (from other benchmarks) count too: divide by all.
	qs, err := c.Store.QueueSettings(ctx)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(c.Progress, "idle: watching a node with %d queues for %s\n", len(qs), c.IdleFor)
	counted.Calls.Store(0)
	time.Sleep(c.IdleFor)
	n := float64(counted.Calls.Load()) / c.IdleFor.Seconds()
	return &IdleResult{Queues: len(qs), Seconds: c.IdleFor.Seconds(), QueriesPerSec: n, PerQueuePerSec: n / float64(len(qs)),
		PollSeconds: 1, HeartbeatSeconds: 10}, nil
}
