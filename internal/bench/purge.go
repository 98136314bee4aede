package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"readpast/internal/queue"
)

// PurgeResult is retention against claims (issue: purge by index): the claim
// p99 of a ready queue while nothing else runs, then while retention purges
// a history of finished tasks in batches of queue.MaxPurgeBatch.
type PurgeResult struct {
	Finished     int     `json:"finished"` // finished tasks purged
	Seconds      float64 `json:"purge_seconds"`
	RowsPerSec   float64 `json:"rows_per_sec"`
	P99Quiet     float64 `json:"claim_p99_quiet_ms"`
	P99Purging   float64 `json:"claim_p99_purging_ms"`
	P99VsQuiet   float64 `json:"p99_vs_quiet"` // the goal is at most 2
	ClaimsDuring int     `json:"claims_during"`
}

const (
	purgeQueue   = "bench-purge"
	purgeHistory = "bench-purge-history"
)

// purge builds c.PurgeHistory finished tasks (in bulk, as the depth part's
// history: keeping the finished counts), measures claims with nothing else
// running, then purges the history with the store's PurgeTasks, as retention
// does, while claiming all along.
func purge(ctx context.Context, c Config) (*PurgeResult, error) {
	r := &PurgeResult{Finished: c.PurgeHistory}
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
	if err := addFinished(ctx, c, purgeHistory, c.PurgeHistory); err != nil {
		return nil, err
	}
	if err := analyze(ctx, c); err != nil {
		return nil, err
	}
	quiet, err := claimAndRelease(ctx, c.Store, purgeQueue, depthClaims, nil)
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
	start := time.Now()
	cutoff := time.Now().Add(time.Minute) // everything finished so far
	var purged int64
	for {
		n, err := c.Store.PurgeTasks(ctx, cutoff, queue.MaxPurgeBatch)
		if err != nil {
			stop()
			wg.Wait()
			return nil, err
		}
		purged += n
		if n == 0 {
			break
		}
	}
	r.Seconds = time.Since(start).Seconds()
	r.Finished = int(purged) // with whatever else had finished in the store
	stop()
	wg.Wait()
	if cerr != nil {
		return nil, cerr
	}
	sortDurations(during)
	r.ClaimsDuring = len(during)
	r.RowsPerSec = float64(purged) / r.Seconds
	r.P99Purging = percentile(during, 99)
	if r.P99Quiet > 0 {
		r.P99VsQuiet = r.P99Purging / r.P99Quiet
	}
	return r, nil
}
