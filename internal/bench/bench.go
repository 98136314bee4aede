// Package bench measures ReadPast on a real store (issue: benchmarks): end-to-end
// throughput, enqueue-to-start latency, claim cost against queue depth and
// history, and the query rate of an idle node. The `bench` subcommand prints
// its Report as a table and as JSON.
package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"time"

	"readpast/internal/dialect"
	"readpast/internal/queue"
	"readpast/internal/target"
	"readpast/internal/workers"
)

// Config says what to measure.
type Config struct {
	Store   workers.Store
	Target  target.Target
	Dialect dialect.Dialect
	DSN     string // the store's, for server statistics
	// Throughput
	Tasks   int // no-op tasks to drain; default 200,000
	Workers int // workers per node; default 64
	Nodes   int // nodes in this process; default 1
	// Latency
	LatencyTasks int     // tasks enqueued one at a time; default 200
	LatencyRate  float64 // per second; default 20
	// Depth: pending depths to measure claims at; default 1k, 100k, 1M
	Depths []int
	// Idle: how long to watch an idle node; default 10s
	IdleFor time.Duration
	// Backlog: tasks that cannot run now (a full group's, delayed ones) ahead
	// of the ready ones; default 1M
	Backlog int
	// Purge: finished tasks to purge while claiming; default 1M
	PurgeHistory int
	// History: sizes of the history of finished tasks to measure the
	// dashboard, API, /metrics and live ticks at; default 1k and 1M
	History []int
	// HistoryRequests: timed requests of each kind per size; default 100
	HistoryRequests int
	// Which parts to run: throughput, latency, depth, idle, backlog, history,
	// purge (default all)
	Only   map[string]bool
	Logger *slog.Logger
	// Progress receives a line per step.
	Progress io.Writer
}

// Report is everything measured, in units named by the field.
type Report struct {
	Dialect    dialect.Dialect    `json:"dialect"`
	Throughput *ThroughputResult  `json:"throughput,omitempty"`
	Latency    *LatencyResult     `json:"latency,omitempty"`
	Depth      []DepthResult      `json:"depth,omitempty"`
	Idle       *IdleResult        `json:"idle,omitempty"`
	Backlog    []BacklogResult    `json:"backlog,omitempty"`
	Purge      *PurgeResult       `json:"purge,omitempty"`
	History    []HistoryResult    `json:"history,omitempty"`
	Extra      map[string]float64 `json:"extra,omitempty"`
}

func (c *Config) defaults() {
	if c.Tasks == 0 {
		c.Tasks = 200000
	}
	if c.Workers == 0 {
		c.Workers = 64
	}
	if c.Nodes == 0 {
		c.Nodes = 1
	}
	if c.LatencyTasks == 0 {
		c.LatencyTasks = 200
	}
	if c.LatencyRate == 0 {
		c.LatencyRate = 20
	}
	if len(c.Depths) == 0 {
		c.Depths = []int{1000, 100000, 1000000}
	}
	if c.IdleFor == 0 {
		c.IdleFor = 10 * time.Second
	}
	if c.Backlog == 0 {
		c.Backlog = 1000000
	}
	if c.PurgeHistory == 0 {
		c.PurgeHistory = 1000000
	}
	if len(c.History) == 0 {
		c.History = []int{1000, 1000000}
	}
	if c.HistoryRequests == 0 {
		c.HistoryRequests = 100
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
}

func (c *Config) wants(part string) bool { return len(c.Only) == 0 || c.Only[part] }

// Run measures what c asks for.
func Run(ctx context.Context, c Config) (*Report, error) {
	c.defaults()
	r := &Report{Dialect: c.Dialect}
	// An earlier run may have been stopped inside a part that keeps tasks.
	for _, q := range keptQueues() {
		if err := pauseQueue(ctx, c.Store, q, true); err != nil {
			return r, fmt.Errorf("pausing %s: %w", q, err)
		}
	}
	var err error
	if c.wants("throughput") {
		if r.Throughput, err = throughput(ctx, c); err != nil {
			return r, fmt.Errorf("throughput: %w", err)
		}
	}
	if c.wants("latency") {
		if r.Latency, err = latency(ctx, c); err != nil {
			return r, fmt.Errorf("latency: %w", err)
		}
	}
	if c.wants("idle") {
		if r.Idle, err = idle(ctx, c); err != nil {
			return r, fmt.Errorf("idle: %w", err)
		}
	}
	if c.wants("depth") {
		if r.Depth, err = depth(ctx, c); err != nil {
			return r, fmt.Errorf("depth: %w", err)
		}
	}
	if c.wants("backlog") {
		if r.Backlog, err = backlog(ctx, c); err != nil {
			return r, fmt.Errorf("backlog: %w", err)
		}
	}
	// Late: the history it leaves would change what the parts above measure.
	if c.wants("history") {
		if r.History, err = history(ctx, c); err != nil {
			return r, fmt.Errorf("history: %w", err)
		}
	}
	// Last: it purges every finished task of the store.
	if c.wants("purge") {
		if r.Purge, err = purge(ctx, c); err != nil {
			return r, fmt.Errorf("purge: %w", err)
		}
	}
	return r, nil
}

// percentile of sorted durations, in milliseconds.
func percentile(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p / 100 * float64(len(sorted)-1))
	return float64(sorted[i].Microseconds()) / 1000
}

func sortDurations(d []time.Duration) { sort.Slice(d, func(i, j int) bool { return d[i] < d[j] }) }

// noop is the body every benchmark task runs: a round trip to the target.
const noop = "SELECT 1"

// startNodes runs n nodes until the returned stop is called (once or more).
func startNodes(c Config, n int, cfg workers.Config) (nodes []*workers.Node, stop func(), err error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, n)
	for i := 0; i < n; i++ {
		cfg.NodeID = fmt.Sprintf("bench-%d", i)
		cfg.Logger = c.Logger
		node, err := workers.New(c.Store, c.Target, cfg)
		if err != nil {
			cancel()
			return nil, nil, err
		}
		nodes = append(nodes, node)
		go func() { _ = node.Run(ctx); done <- struct{}{} }()
		<-node.Ready()
	}
	var once sync.Once
	return nodes, func() {
		once.Do(func() {
			cancel()
			for range nodes {
				<-done
			}
		})
	}, nil
}

// enqueueBulk enqueues k copies of t in batches of 1000 and returns the rate.
func enqueueBulk(ctx context.Context, s queue.Store, k int, t queue.NewTask) (float64, error) {
	batch := make([]queue.NewTask, 0, 1000)
	start := time.Now()
	for done := 0; done < k; done += len(batch) {
		batch = batch[:0]
		for i := 0; i < min(1000, k-done); i++ {
			batch = append(batch, t)
		}
		if _, err := s.Enqueue(ctx, batch); err != nil {
			return 0, err
		}
	}
	return float64(k) / time.Since(start).Seconds(), nil
}

// keptQueues are the queues whose pending tasks stay from run to run, paused
// whenever their part does not measure them.
func keptQueues() []string {
	out := []string{depthQueue, purgeQueue}
	for _, b := range backlogs {
		out = append(out, b.queue)
	}
	return out
}
