package bench

import (
	"context"
	"fmt"
	"time"

	"readpast/internal/dialect"
	"readpast/internal/queue"
)

// DepthResult is the cost of one claim round trip (batch of 1) at a queue depth.
type DepthResult struct {
	Pending  int     `json:"pending"`
	Finished int     `json:"finished_history"`
	Claims   int     `json:"claims"`
	P50      float64 `json:"claim_p50_ms"`
	P99      float64 `json:"claim_p99_ms"`
}

const (
	depthQueue   = "bench-depth"
	historyQueue = "bench-history"
	depthClaims  = 500
)

// depth grows one queue's pending tasks through c.Depths and measures claims at
// each; after the first depth it also adds as many finished tasks as the
// largest depth to the history and measures again, so the report shows whether
// history or depth changes the claim's cost.
//
// Its pending tasks stay for the next run (released, never finished), so
// between measurements the queue is paused: no node of a later part or run
// takes them. A paused queue refuses claims, so it is resumed while measuring,
// when no node of the benchmark runs.
func depth(ctx context.Context, c Config) ([]DepthResult, error) {
	s := c.Store
	if err := pauseQueue(ctx, s, depthQueue, false); err != nil {
		return nil, err
	}
	defer func() {
		if err := pauseQueue(context.WithoutCancel(ctx), s, depthQueue, true); err != nil {
			fmt.Fprintf(c.Progress, "depth: pausing %s again: %v\n", depthQueue, err)
		}
	}()
	// A database that an earlier run measured holds its tasks still: start from
	// what is there, and report the depths as they are.
	_, pending64, err := queueCounts(ctx, s, depthQueue)
	if err != nil {
		return nil, err
	}
	history64, _, err := queueCounts(ctx, s, historyQueue)
	if err != nil {
		return nil, err
	}
	pending, history := int(pending64), int(history64)
	var out []DepthResult
	for i, d := range c.Depths {
		if d > pending {
			fmt.Fprintf(c.Progress, "depth: growing to %d pending\n", d)
			if _, err := enqueueBulk(ctx, s, d-pending, queue.NewTask{Queue: depthQueue, Body: noop}); err != nil {
				return out, err
			}
			pending = d
		}
		r, err := measureClaims(ctx, s, pending, history)
		if err != nil {
			return out, err
		}
		out = append(out, r)
		if h := c.Depths[len(c.Depths)-1]; i == 0 && history < h {
			fmt.Fprintf(c.Progress, "depth: adding %d finished tasks to the history\n", h-history)
			if err := addFinished(ctx, c, historyQueue, h-history); err != nil {
				return out, err
			}
			history = h
			if r, err = measureClaims(ctx, s, pending, history); err != nil {
				return out, err
			}
			out = append(out, r)
		}
	}
	return out, nil
}

// pauseQueue pauses or resumes queue q. The parts that keep pending tasks
// between runs pause their queues while they do not measure them, so no
// node of another part takes those tasks; a paused queue refuses claims.
func pauseQueue(ctx context.Context, s queue.Store, q string, paused bool) error {
	_, err := s.UpdateQueue(ctx, q, queue.QueueUpdate{Paused: &paused, Actor: "bench"})
	return err
}

// measureClaims claims at the depth part's queue.
func measureClaims(ctx context.Context, s queue.Store, pending, history int) (DepthResult, error) {
	took, err := claimAndRelease(ctx, s, depthQueue, depthClaims, nil)
	if err != nil {
		return DepthResult{}, fmt.Errorf("at depth %d: %w", pending, err)
	}
	return DepthResult{Pending: pending, Finished: history, Claims: depthClaims, P50: percentile(took, 50), P99: percentile(took, 99)}, nil
}

// claimAndRelease claims one task of q at a time n times, checks it (check may
// be nil) and releases it, timing the claims only; the times come back
// sorted. A released task is pending again at once, so the queue stays as
// it was (finishing the tasks would drain n per measurement).
func claimAndRelease(ctx context.Context, s queue.Store, q string, n int, check func(*queue.Task) error) ([]time.Duration, error) {
	return claimAndReleaseOf(ctx, s, q, nil, n, check)
}

// claimAndReleaseOf is claimAndRelease of the tasks of targets only (nil:
// any target's), as a node that serves them claims.
func claimAndReleaseOf(ctx context.Context, s queue.Store, q string, targets []string, n int, check func(*queue.Task) error) ([]time.Duration, error) {
	took := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		start := time.Now()
		got, err := s.Claim(ctx, queue.ClaimParams{Queue: q, Owner: "bench/claims", Limit: 1, LeaseDuration: time.Minute, Targets: targets})
		took = append(took, time.Since(start))
		if err != nil {
			return nil, err
		}
		if len(got) != 1 {
			return nil, fmt.Errorf("a claim of queue %s returned %d tasks", q, len(got))
		}
		if check != nil {
			if err := check(got[0]); err != nil {
				return nil, err
			}
		}
		now := time.Now()
		if _, err := s.Release(ctx, []queue.Attempt{{Lease: got[0].Lease(), Outcome: queue.OutcomeCancelled,
			Error: "released by the benchmark", StartedAt: now, FinishedAt: now}}); err != nil {
			return nil, err
		}
	}
	sortDurations(took)
	return took, nil
}

// addFinished enqueues n tasks on queue q and marks them finished directly in
// SQL: a million real finish transactions would take longer than the
// measurement and leave the same rows. The finished counts the store keeps
// beside the tasks (readpast_counts) are set to what the queue now holds, as
// a finish would have kept them. It writes no log rows: the claim the depth
// part measures never reads them (buildHistory writes them, for the parts
// that read or purge the log).
func addFinished(ctx context.Context, c Config, q string, n int) error {
	if _, err := enqueueBulk(ctx, c.Store, n, queue.NewTask{Queue: q, Body: noop}); err != nil {
		return err
	}
	now := map[dialect.Dialect]string{dialect.Postgres: "now()", dialect.SQLServer: "SYSUTCDATETIME()",
		dialect.SQLite: "CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER)"}[c.Dialect]
	_, err := c.Target.Run(ctx, fmt.Sprintf(`UPDATE readpast_tasks SET state = 'succeeded', attempts = 1, finished_at = %[1]s
		WHERE queue = '%[2]s' AND state = 'pending';
		DELETE FROM readpast_counts WHERE queue = '%[2]s';
		INSERT INTO readpast_counts (queue, state, n)
		SELECT queue, state, count(*) FROM readpast_tasks
		 WHERE queue = '%[2]s' AND state IN ('succeeded', 'failed', 'cancelled') GROUP BY queue, state;`, now, q), nil)
	return err
}
