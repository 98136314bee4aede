package workers

import (
	"context"
	"log/slog"
	"time"

	"readpast/internal/logs"
)

// retention purges execution-log rows and finished tasks past their ages
// (Config.LogRetention, Config.TaskRetention; zero keeps them) and the
// throughput rollup's old buckets, once when the node starts and then every
// Config.RetentionEvery (asynq's janitor.go). The purge itself is
// logs.Retention's: small batches with pauses, so it never holds for long the
// locks, or SQLite's writer, that claims need. Every node runs it; two purges
// at once delete disjoint batches or find nothing left.
type retention struct {
	lifecycle
	purge    logs.Retention
	interval time.Duration
	log      *slog.Logger
}

// Start purges now and then every interval until ctx ends or Stop; Stop cuts
// a purge short between batches.
func (r *retention) Start(ctx context.Context) {
	r.start(ctx, func(ctx context.Context) { every(ctx, r.interval, true, r.purgeOnce) })
}

func (r *retention) purgeOnce(ctx context.Context) {
	if _, err := r.purge.PurgeOnce(ctx); err != nil && ctx.Err() == nil {
		r.log.Warn("retention purge", "err", err)
	}
}
