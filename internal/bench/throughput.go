package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"readpast/internal/dialect"
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
	WriteTxPerTask float64 `json:"write_transactions_per_task,omitempty"`
	// CPU time per task while draining: the database server's (PostgreSQL on
	// this machine only, every process of it) and this process's (the nodes).
	ServerCPUPerTaskUS float64 `json:"server_cpu_us_per_task,omitempty"`
	NodeCPUPerTaskUS   float64 `json:"node_cpu_us_per_task"`
	PeakRSSMB          float64 `json:"peak_rss_mb"`
	// The hot path's batches while draining: tasks per claim call and
	// attempts per finish call, over every queue of the nodes.
	TasksPerClaim     float64 `json:"tasks_per_claim"`
	AttemptsPerFinish float64 `json:"attempts_per_finish"`
	// Where the worker slots' time went while draining.
	Slots *SlotTimes `json:"slots,omitempty"`
	// What the target does without the queue, measured after the drain, and
	// the drain's ratio to it.
	Limit        *LimitResult `json:"limit,omitempty"`
	OfBodyLimit  float64      `json:"of_body_and_reset_limit,omitempty"`
	OfOneConnSQL float64      `json:"of_one_connection_select1,omitempty"`
}

const throughputQueue = "bench-throughput"

// throughput enqueues K tasks into a paused queue, then resumes it, starts the
// nodes and times from their start until every task succeeded: claim → run on the target →
// complete → log row, end to end.
func throughput(ctx context.Context, c Config) (*ThroughputResult, error) {
	s := c.Store
	r := &ThroughputResult{Tasks: c.Tasks, Nodes: c.Nodes, Workers: c.Workers}
	if _, err := s.UpdateQueue(ctx, throughputQueue, queue.QueueUpdate{Workers: &c.Workers, Paused: ptr(true), Actor: "bench"}); err != nil {
		return nil, err
	}
	// Tasks an earlier run left finished in the queue are not this run's; one it
	// left unfinished would be drained with this run's and skew it.
	base, unfinished, err := queueCounts(ctx, s, throughputQueue)
	if err != nil {
		return nil, err
	}
	if unfinished > 0 {
		return nil, fmt.Errorf("queue %s holds %d unfinished tasks of an earlier run: cancel them or use a scratch database", throughputQueue, unfinished)
	}
	fmt.Fprintf(c.Progress, "throughput: enqueueing %d no-op tasks\n", c.Tasks)
	if r.EnqueuePerSec, err = enqueueBulk(ctx, s, c.Tasks, queue.NewTask{Queue: throughputQueue, Body: noop}); err != nil {
		return nil, err
	}
	// Completion is counted as the nodes record it: polling the store's per-state
	// counts would itself load the database it measures.
	cc := c
	var counted *workers.StoreCalls
	cc.Store, counted = workers.CountCalls(c.Store)
	stats := &workers.DrainStats{}
	waited0 := connWait(c.Target)
	writes0 := writeTxCount(ctx, c)
	server := serverCPU(ctx, c)
	node0 := ProcessCPU()
	fmt.Fprintf(c.Progress, "throughput: draining with %d node(s) × %d workers\n", c.Nodes, c.Workers)
	// The queue is resumed before the nodes start, and the clock runs from
	// their start, as riverbench's runs from River's client.Start: a node that
	// ran before the resume would see it only at its next read of the
	// settings, up to a second later (SettingsEvery), which is not drain time.
	if _, err := s.UpdateQueue(ctx, throughputQueue, queue.QueueUpdate{Paused: ptr(false), Actor: "bench"}); err != nil {
		return nil, err
	}
	start := time.Now()
	_, stop, err := startNodes(cc, c.Nodes, workers.Config{Poll: 100 * time.Millisecond, Stats: stats})
	if err != nil {
		return nil, err
	}
	defer stop()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for counted.Finished(throughputQueue) < int64(c.Tasks) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
	drained := time.Since(start)
	r.DrainSeconds = drained.Seconds()
	r.Slots = slotTimes(stats, time.Duration(c.Nodes*c.Workers)*drained, connWait(c.Target)-waited0)
	r.EndToEndPerSec = float64(c.Tasks) / r.DrainSeconds
	r.NodeCPUPerTaskUS = perTaskUS(ProcessCPU()-node0, c.Tasks)
	r.ServerCPUPerTaskUS = perTaskUS(server(), c.Tasks)
	if writes0 >= 0 {
		if writes1 := writeTxCount(ctx, c); writes1 >= 0 {
			r.WriteTxPerTask = float64(writes1-writes0) / float64(c.Tasks)
		}
	}
	r.PeakRSSMB = peakRSSMB()
	r.TasksPerClaim = ratio(counted.ClaimedTasks.Load(), counted.Claims.Load())
	r.AttemptsPerFinish = ratio(counted.FinishedEnds.Load(), counted.Finishes.Load())
	// The store must agree: every task of this run finished.
	if done, _, err := queueCounts(ctx, s, throughputQueue); err != nil {
		return nil, err
	} else if done-base < int64(c.Tasks) {
		return nil, fmt.Errorf("the nodes recorded %d finished tasks but the store shows %d", c.Tasks, done-base)
	}
	stop()
	if r.Limit, err = limit(ctx, c); err != nil {
		return nil, fmt.Errorf("the target's limit: %w", err)
	}
	r.OfBodyLimit = r.EndToEndPerSec / r.Limit.BodyPerSec
	if r.Limit.OneConnPerSec > 0 {
		r.OfOneConnSQL = r.EndToEndPerSec / r.Limit.OneConnPerSec
	}
	return r, nil
}

// serverCPU starts counting the database server's CPU time; the returned func
// says how much it used since, or 0 where that cannot be read (a server on
// another machine, a dialect other than PostgreSQL).
func serverCPU(ctx context.Context, c Config) func() time.Duration {
	if c.Dialect != dialect.Postgres {
		return func() time.Duration { return 0 }
	}
	m, err := NewCPUMeter(ctx, c.DSN)
	if err != nil {
		c.Logger.Info("server CPU not measured", "err", err)
		return func() time.Duration { return 0 }
	}
	t0, err := m.Used()
	if err != nil {
		return func() time.Duration { return 0 }
	}
	return func() time.Duration {
		t1, err := m.Used()
		if err != nil {
			return 0
		}
		return t1 - t0
	}
}

// ratio is n/d, 0 when d is.
func ratio(n, d int64) float64 {
	if d == 0 {
		return 0
	}
	return float64(n) / float64(d)
}

// perTaskUS divides d over n tasks, in microseconds.
func perTaskUS(d time.Duration, n int) float64 { return float64(d.Microseconds()) / float64(n) }

// queueCounts returns how many tasks of queue q finished for good and how
// many are pending or running.
func queueCounts(ctx context.Context, s queue.Store, q string) (finished, unfinished int64, err error) {
	qs, err := s.Queues(ctx)
	if err != nil {
		return 0, 0, err
	}
	for _, x := range qs {
		if x.Name == q {
			for st, n := range x.Counts {
				if st.Finished() {
					finished += n
				} else {
					unfinished += n
				}
			}
			return finished, unfinished, nil
		}
	}
	return 0, 0, nil
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
