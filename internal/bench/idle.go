package bench

import (
	"context"
	"fmt"
	"sync/atomic"
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
	counted := &countingStore{Store: c.Store}
	cc := c
	cc.Store = counted
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
	counted.calls.Store(0)
	time.Sleep(c.IdleFor)
	n := float64(counted.calls.Load()) / c.IdleFor.Seconds()
	return &IdleResult{Queues: len(qs), Seconds: c.IdleFor.Seconds(), QueriesPerSec: n, PerQueuePerSec: n / float64(len(qs)),
		PollSeconds: 1, HeartbeatSeconds: 10}, nil
}

// countingStore counts the calls that reach the database.
type countingStore struct {
	workers.Store
	calls atomic.Int64
}

func (s *countingStore) Claim(ctx context.Context, p queue.ClaimParams) ([]*queue.Task, error) {
	s.calls.Add(1)
	return s.Store.Claim(ctx, p)
}

func (s *countingStore) QueueSettings(ctx context.Context) ([]queue.Queue, error) {
	s.calls.Add(1)
	return s.Store.QueueSettings(ctx)
}

func (s *countingStore) HeartbeatNode(ctx context.Context, id, info string) error {
	s.calls.Add(1)
	return s.Store.HeartbeatNode(ctx, id, info)
}

func (s *countingStore) Heartbeat(ctx context.Context, l []queue.Lease, d time.Duration) (queue.HeartbeatResult, error) {
	s.calls.Add(1)
	return s.Store.Heartbeat(ctx, l, d)
}

func (s *countingStore) ReclaimExpired(ctx context.Context, limit int) ([]queue.FinishResult, error) {
	s.calls.Add(1)
	return s.Store.ReclaimExpired(ctx, limit)
}
