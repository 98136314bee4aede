package workers

import (
	"context"
	"log/slog"
	"time"
)

// reclaimBatch bounds the expired leases one reclaim takes back.
const reclaimBatch = 100

// reclaimer takes back the tasks whose lease ran out on any node (asynq's
// recoverer.go): every min(lease/3, 10 s) by default, each such attempt is
// logged lost and its task retried or failed, and the node's pools are woken
// to claim what became pending. Every node runs one, so tasks of a node that
// died come back as long as any node lives.
type reclaimer struct {
	lifecycle
	store    Store
	interval time.Duration
	wake     func() // wakes every pool of the node
	log      *slog.Logger
}

// Start reclaims every interval until ctx ends or Stop.
func (r *reclaimer) Start(ctx context.Context) {
	r.start(ctx, func(ctx context.Context) { every(ctx, r.interval, false, r.reclaim) })
}

func (r *reclaimer) reclaim(ctx context.Context) {
	res, err := r.store.ReclaimExpired(ctx, reclaimBatch)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Warn("reclaiming expired leases", "err", err)
		}
		return
	}
	for _, t := range res {
		r.log.Info("reclaimed a task whose lease expired", "task", t.TaskID, "state", t.State)
	}
	if len(res) > 0 {
		r.wake()
	}
}
