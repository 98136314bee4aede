package logs

import (
	"cmp"
	"context"
	"log/slog"
	"time"

	"readpast/internal/queue"
)

// Retention purges log rows and finished tasks older than their ages, in small
// batches with a pause between them, so a purge of millions of rows never holds
// the locks or the single SQLite writer that the claim path needs for long.
// Each worker node runs it on a schedule (internal/workers, retention.go).
//
// How it paces itself depends on the store (Capabilities().ConcurrentWriters):
//
//   - Where writers run side by side (PostgreSQL, SQL Server) a batch locks
//     only the finished rows it deletes, which no claim wants, so batches are
//     Batch rows (default 500) and Pause (default 50 ms) apart.
//   - Where the store has one writer (SQLite) every batch holds the writer that
//     claims, finishes and enqueues need, and a claim that arrives meanwhile
//     waits for the whole batch. There batches are oneWriterBatch rows, whose
//     commit does not wait for the disk (the store's purges), so each holds
//     the writer well under a quiet claim's p99, and the pause after a batch
//     is oneWriterShare-1 times as long as the batch took (at least Pause,
//     when set), so the purge has the writer at most 1/oneWriterShare of the
//     time. What a batch took includes its wait for the writer, so a busy
//     writer slows the purge further. Measured in
//     docs/benchmarks/backlog-and-retention.md (issue 11): 500-row batches
//     50 ms apart, each with its fsync, held the writer
//     2.4–4 ms and raised SQLite's claim p99 3.56× while purging 1M tasks and
//     their log; 50-row batches with their fsync 3.59×, without it 2.23×
//     (about 1 ms a batch); 20-row batches without it, the figure there.
type Retention struct {
	Store   RetentionStore
	LogAge  time.Duration // execution-log rows older than this go; 0 keeps them
	TaskAge time.Duration // finished tasks older than this go; 0 keeps them
	NodeAge time.Duration // rows of nodes gone longer than this go; 0: queue.NodesGoneKept
	Batch   int           // most rows per delete; default 500
	Pause   time.Duration // least pause between batches; default 50ms where writers run side by side
	Logger  *slog.Logger  // where a purge that deleted rows says how many; nil: nowhere
}

// RetentionStore is what a purge needs of a store: its log side, its nodes
// and whether its writes run side by side.
type RetentionStore interface {
	queue.LogStore
	PurgeNodes(ctx context.Context, cutoff time.Time) (int64, error)
	// PurgeRuns: job runs go with the task history, at its age (docs/JOBS.md).
	PurgeRuns(ctx context.Context, cutoff time.Time, batch int) (int64, error)
	Capabilities() queue.Capabilities
}

const (
	defaultBatch = 500
	defaultPause = 50 * time.Millisecond
	// oneWriterBatch: a batch of 20 tasks or log rows holds SQLite's writer
	// about 0.4 ms (20 µs a row with its index entries, and the commit),
	// under a quiet claim's p99.
	oneWriterBatch = 20
	// oneWriterShare: the purge has a single writer at most 1/oneWriterShare
	// of the time.
	oneWriterShare = 10
)

// PurgeOnce deletes everything past its age now and reports how many log rows
// and tasks went. The throughput rollup's old buckets go too, whatever the
// ages (queue.RollupMinutesKept, queue.RollupHoursKept), and the rows of nodes
// gone for longer than NodeAge.
func (r *Retention) PurgeOnce(ctx context.Context) (int64, error) {
	now := time.Now()
	if _, err := r.Store.PurgeRollups(ctx, now); err != nil {
		return 0, err
	}
	if _, err := r.Store.PurgeNodes(ctx, now.Add(-cmp.Or(r.NodeAge, queue.NodesGoneKept))); err != nil {
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
		n, err = r.loop(ctx, now.Add(-r.TaskAge), r.Store.PurgeRuns)
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
	p := newPacer(r.Batch, r.Pause, !r.Store.Capabilities().ConcurrentWriters)
	var total int64
	for {
		batch := p.batch
		start := time.Now()
		n, err := purge(ctx, cutoff, batch)
		total += n
		if err != nil || n < int64(batch) {
			return total, err
		}
		select {
		case <-ctx.Done():
			return total, ctx.Err()
		case <-time.After(p.next(time.Since(start))):
		}
	}
}

// newPacer paces a purge of batches of at most most rows (0: the default
// for the store) at least pause apart (0: defaultPause where writers run side
// by side, none besides the share on one writer).
func newPacer(most int, pause time.Duration, oneWriter bool) *pacer {
	p := &pacer{oneWriter: oneWriter, batch: most, pause: pause}
	switch {
	case p.batch > 0:
	case oneWriter:
		p.batch = oneWriterBatch
	default:
		p.batch = defaultBatch
	}
	if !oneWriter && p.pause <= 0 {
		p.pause = defaultPause
	}
	return p
}

// pacer sizes the batches of a purge and the pause after each (see Retention).
type pacer struct {
	oneWriter bool
	batch     int           // rows per batch
	pause     time.Duration // the least pause
}

// next takes how long the last batch took and returns how long to wait
// before the next one.
func (p *pacer) next(took time.Duration) time.Duration {
	if !p.oneWriter {
		return p.pause
	}
	return max(p.pause, took*(oneWriterShare-1))
}
