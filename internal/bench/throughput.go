package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"readpast/internal/queue"
	"readpast/internal/workers"
)

// ThroughputResult is the burn-down of K no-op tasks.
type ThroughputResult struct {
	Tasks          int     `json:"tasks"`
	Nodes          int     `json:"nodes"`
	Workers        int     `json:"workers_per_node"`
	EnqueuePerSec  float64 `json:"enqueue_per_sec"`
	DrainSeconds   float64 `json:"drain_seconds"`
	EndToEndPerSec float64 `json:"end_to_end_per_sec"`
	CommitsPerTask float64 `json:"commits_per_task,omitempty"`
	PeakRSSMB      float64 `json:"peak_rss_mb"`
}

const throughputQueue = "bench-throughput"

// throughput enqueues K tasks into a paused queue, then resumes it under the
// nodes and times until every task succeeded: claim → run on the target →
// complete → log row, end to end.
func throughput(ctx context.Context, c Config) (*ThroughputResult, error) {
	s := c.Store
	r := &ThroughputResult{Tasks: c.Tasks, Nodes: c.Nodes, Workers: c.Workers}
	if _, err := s.UpdateQueue(ctx, throughputQueue, queue.QueueUpdate{Workers: &c.Workers, Paused: ptr(true), Actor: "bench"}); err != nil {
		return nil, err
	}
	fmt.Fprintf(c.Progress, "throughput: enqueueing %d no-op tasks\n", c.Tasks)
	var err error
	if r.EnqueuePerSec, err = enqueueBulk(ctx, s, c.Tasks, queue.NewTask{Queue: throughputQueue, Body: noop}); err != nil {
		return nil, err
	}
	_, stop, err := startNodes(c, c.Nodes, workers.Config{Poll: 100 * time.Millisecond})
	if err != nil {
		return nil, err
	}
	defer stop()
	commits0 := commitCount(ctx, c)
	fmt.Fprintf(c.Progress, "throughput: draining with %d node(s) × %d workers\n", c.Nodes, c.Workers)
	start := time.Now()
	if _, err := s.UpdateQueue(ctx, throughputQueue, queue.QueueUpdate{Paused: ptr(false), Actor: "bench"}); err != nil {
		return nil, err
	}
	for {
		done, err := finishedCount(ctx, s, throughputQueue)
		if err != nil {
			return nil, err
		}
		if done >= int64(c.Tasks) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	r.DrainSeconds = time.Since(start).Seconds()
	r.EndToEndPerSec = float64(c.Tasks) / r.DrainSeconds
	if commits0 >= 0 {
		if commits1 := commitCount(ctx, c); commits1 >= 0 {
			r.CommitsPerTask = float64(commits1-commits0) / float64(c.Tasks)
		}
	}
	r.PeakRSSMB = peakRSSMB()
	return r, nil
}

func finishedCount(ctx context.Context, s queue.Store, q string) (int64, error) {
	qs, err := s.Queues(ctx)
	if err != nil {
		return 0, err
	}
	for _, x := range qs {
		if x.Name == q {
			return x.Counts[queue.StateSucceeded] + x.Counts[queue.StateFailed], nil
		}
	}
	return 0, nil
}

// peakRSSMB reads this process's peak resident set (VmHWM) on Linux; 0 elsewhere.
func peakRSSMB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

func ptr[T any](v T) *T { return &v }
