package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"readpast/internal/logs"
	"readpast/internal/queue"
)

// PurgeResult is retention against claims (issue: purge by index): the claim
// p99 of a ready queue while nothing else runs, then while retention purges
// a history of finished tasks as every node's does (logs.Retention: its
// batches and its pauses between them).
type PurgeResult struct {
	Finished     int     `json:"finished"` // finished tasks purged
	Rows         int64   `json:"rows"`     // rows purged: the tasks and their log rows
	Seconds      float64 `json:"purge_seconds"`
	RowsPerSec   float64 `json:"rows_per_sec"`
	P99Quiet     float64 `json:"claim_p99_quiet_ms"`
	P99Purging   float64 `json:"claim_p99_purging_ms"`
	P99VsQuiet   float64 `json:"p99_vs_quiet"` // the goal is at most 2
	ClaimsDuring int     `json:"claims_during"`
}

const purgeQueue = "bench-purge"

// purgeHistory is where the purge part's history goes: finished over the
// historyDays days that ended purgeAge + 1 day ago, so that a retention of
// purgeAge takes it all and none of the other parts' finished tasks (the
// history part's are at most historyDays old).
var purgeHistory = historyShape{prefix: "bench-purge-history-", endDaysAgo: purgeAgeDays + 1}

const purgeAgeDays = 2 * historyDays

// purgeQuietClaims are timed before a purge of 1M tasks: enough that the p99
// is not one slow claim (of 500, the 5th slowest moved from 0.65 to 3.4 ms
// between two SQLite runs of the same build). A smaller purge (the tests')
// times one for every 100 tasks it purges, at least depthClaims.
const purgeQuietClaims = 10000

// purge builds c.PurgeHistory finished tasks with their log rows (in bulk, as
// the history part's), measures claims with nothing else running, then
// purges them with the retention every node runs (logs.Retention, its
// defaults, at an age that takes exactly them), while claiming all along.
func purge(ctx context.Context, c Config) (*PurgeResult, error) {
	r := &PurgeResult{}
	if err := pauseQueue(ctx, c.Store, purgeQueue, false); err != nil {
		return nil, err
	}
	defer func() { _ = pauseQueue(context.WithoutCancel(ctx), c.Store, purgeQueue, true) }()
	_, pending, err := queueCounts(ctx, c.Store, purgeQueue)
	if err != nil {
		return nil, err
	}
	if pending < backlogReady {
		if _, err := enqueueBulk(ctx, c.Store, backlogReady, queue.NewTask{Queue: purgeQueue, Body: noop}); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(c.Progress, "purge: adding %d finished tasks\n", c.PurgeHistory)
	if err := buildHistory(ctx, c, purgeHistory, c.PurgeHistory); err != nil {
		return nil, err
	}
	quiet, err := claimAndRelease(ctx, c.Store, purgeQueue, min(purgeQuietClaims, max(depthClaims, c.PurgeHistory/100)), nil)
	if err != nil {
		return nil, err
	}
	r.P99Quiet = percentile(quiet, 99)

	fmt.Fprintf(c.Progress, "purge: purging %d finished tasks while claiming\n", c.PurgeHistory)
	pctx, stop := context.WithCancel(ctx)
	var (
		during []time.Duration
		cerr   error
		wg     sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for pctx.Err() == nil {
			took, err := claimAndRelease(ctx, c.Store, purgeQueue, 20, nil)
			if err != nil {
				cerr = err
				return
			}
			during = append(during, took...)
		}
	}()
	age := purgeAgeDays * 24 * time.Hour
	ret := logs.Retention{Store: c.Store, LogAge: age, TaskAge: age}
	before, err := finishedIn(ctx, c.Store, nil)
	start := time.Now()
	if err == nil {
		r.Rows, err = ret.PurgeOnce(ctx)
	}
	r.Seconds = time.Since(start).Seconds()
	stop()
	wg.Wait()
	if err != nil {
		return nil, err
	}
	if cerr != nil {
		return nil, cerr
	}
	after, err := finishedIn(ctx, c.Store, nil)
	if err != nil {
		return nil, err
	}
	r.Finished = int(before - after)
	sortDurations(during)
	r.ClaimsDuring = len(during)
	r.RowsPerSec = float64(r.Rows) / r.Seconds
	r.P99Purging = percentile(during, 99)
	if r.P99Quiet > 0 {
		r.P99VsQuiet = r.P99Purging / r.P99Quiet
	}
	return r, nil
}
