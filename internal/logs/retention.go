package logs

import (
	"context"
	"log/slog"
	"time"

	"readpast/internal/queue"
)

// Retention purges log rows and finished tasks older than their ages, in small
// batches with a pause between them, so a purge of millions of rows never holds
// the locks or the single SQLite writer that the claim path needs for long.
// Each worker node runs it on a schedule (internal/workers, retention.go).
type Retention struct {
	Store   queue.LogStore
	LogAge  time.Duration // execution-log rows older than this go; 0 keeps them
	TaskAge time.Duration // finished tasks older than this go; 0 keeps them
	Batch   int           // rows per delete; default 500
	Pause   time.Duration // between batches; default 50ms
	Logger  *slog.Logger  // where a purge that deleted rows says how many; nil: nowhere
}

// PurgeOnce deletes everything past its age now and reports how many log rows
// and tasks went. The throughput rollup's old buckets go too, whatever the
// ages: it keeps a fixed window (queue.RollupMinutesKept, queue.RollupHoursKept).
func (r *Retention) PurgeOnce(ctx context.Context) (int64, error) {
	now := time.Now()
	if _, err := r.Store.PurgeRollups(ctx, now); err != nil {
		return 0, err
	}
	var total int64
	if r.LogAge > 0 {
		n, err := r.loop(ctx, now.Add(-r.LogAge), r.Store.PurgeAttempts)
		total += n
		if err != nil {
			return total, err
		}
	}
	if r.TaskAge > 0 {
		n, err := r.loop(ctx, now.Add(-r.TaskAge), r.Store.PurgeTasks)
		total += n
		if err != nil {
			return total, err
		}
	}
	if total > 0 && r.Logger != nil {
		r.Logger.Info("retention purge", "rows", total)
	}
	return total, nil
}

func (r *Retention) loop(ctx context.Context, cutoff time.Time, purge func(context.Context, time.Time, int) (int64, error)) (int64, error) {
	batch := r.Batch
	if batch <= 0 {
		batch = 500
	}
	pause := r.Pause
	if pause <= 0 {
		pause = 50 * time.Millisecond
	}
	var total int64
	for {
		n, err := purge(ctx, cutoff, batch)
		total += n
		if err != nil || n < int64(batch) {
			return total, err
		}
		select {
		case <-ctx.Done():
			return total, ctx.Err()
		case <-time.After(pause):
		}
	}
}
