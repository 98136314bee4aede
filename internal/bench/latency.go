package bench

import (
	"context"
	"fmt"
	"time"

	"readpast/internal/queue"
	"readpast/internal/workers"
)

// LatencyResult is enqueue→start and enqueue→finish on an otherwise idle node,
// in milliseconds.
type LatencyResult struct {
	Tasks       int     `json:"tasks"`
	RatePerSec  float64 `json:"rate_per_sec"`
	StartP50    float64 `json:"enqueue_to_start_p50_ms"`
	StartP95    float64 `json:"enqueue_to_start_p95_ms"`
	StartP99    float64 `json:"enqueue_to_start_p99_ms"`
	FinishP50   float64 `json:"enqueue_to_finish_p50_ms"`
	FinishP95   float64 `json:"enqueue_to_finish_p95_ms"`
	FinishP99   float64 `json:"enqueue_to_finish_p99_ms"`
	PollSeconds float64 `json:"poll_seconds"`
}

const latencyQueue = "bench-latency"

// latency enqueues one task at a time at a fixed rate through the node (as the
// API does: enqueue, then wake the queue's pool) with the default 1 s poll, so
// only wake-ups can make starts fast. Start and finish times are the worker's
// own, from the execution log.
func latency(ctx context.Context, c Config) (*LatencyResult, error) {
	s := c.Store
	if _, err := s.UpdateQueue(ctx, latencyQueue, queue.QueueUpdate{Workers: ptr(4), Paused: ptr(false), Actor: "bench"}); err != nil {
		return nil, err
	}
	nodes, stop, err := startNodes(c, 1, workers.Config{Poll: time.Second})
	if err != nil {
		return nil, err
	}
	defer stop()
	time.Sleep(1500 * time.Millisecond) // past the first poll: the node is idle
	fmt.Fprintf(c.Progress, "latency: %d tasks at %.0f/s\n", c.LatencyTasks, c.LatencyRate)
	interval := time.Duration(float64(time.Second) / c.LatencyRate)
	enqueued := map[int64]time.Time{}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for i := 0; i < c.LatencyTasks; i++ {
		<-tick.C
		at := time.Now()
		res, err := s.Enqueue(ctx, []queue.NewTask{{Queue: latencyQueue, Body: noop}})
		if err != nil {
			return nil, err
		}
		nodes[0].Wake(latencyQueue)
		enqueued[res[0].ID] = at
	}
	var starts, finishes []time.Duration
	deadline := time.Now().Add(30 * time.Second)
	for id, at := range enqueued {
		for {
			recs, err := s.TaskAttempts(ctx, id)
			if err != nil {
				return nil, err
			}
			if len(recs) > 0 {
				starts = append(starts, recs[0].StartedAt.Sub(at))
				finishes = append(finishes, recs[0].FinishedAt.Sub(at))
				break
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("task %d did not finish within 30 s", id)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	sortDurations(starts)
	sortDurations(finishes)
	return &LatencyResult{Tasks: c.LatencyTasks, RatePerSec: c.LatencyRate, PollSeconds: 1,
		StartP50: percentile(starts, 50), StartP95: percentile(starts, 95), StartP99: percentile(starts, 99),
		FinishP50: percentile(finishes, 50), FinishP95: percentile(finishes, 95), FinishP99: percentile(finishes, 99)}, nil
}
