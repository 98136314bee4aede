package workers

import (
	"context"
	"log/slog"
	"time"

	"readpast/internal/queue"
	"readpast/internal/target"
)

const (
	// reclaimBatch bounds the expired leases one call of the store takes back.
	reclaimBatch = 100
	// reclaimRounds bounds the calls of one reclaim: while a call takes back
	// a full batch, more leases may have expired, and the next call follows
	// at once. A node that froze or was cut off holds, besides its running
	// bodies, the tasks it claimed ahead (pool.free: up to 32 a slot): a
	// batch a round every third of the lease handed hundreds of them back
	// over several rounds, while the other nodes' queue could run dry.
	reclaimRounds = 20
)

// reclaimer takes back the tasks whose lease ran out on any node (asynq's
// recoverer.go): every min(lease/3, 10 s) by default, each such attempt is
// logged lost and its task retried or failed, and the node's pools are woken
// to claim what became pending. Every node runs one, so tasks of a node that
// died come back as long as any node lives.
//
// Before a lease is taken back, its attempt's session on the target is ended
// when the target can (ender: PostgreSQL), found by the name the attempt gave
// it (queue.AttemptSessionName). A node frozen whole, or cut off from a target
// that is its store, runs no fence, and the server would run its body on beside
// the next attempt; a node merely dead has no session left, and nothing is
// ended. Ending is best effort: an error is logged and the reclaim goes on, as
// it did before.
type reclaimer struct {
	lifecycle
	store     Store
	interval  time.Duration
	wake      func() // wakes every pool of the node
	ender     target.SessionEnder
	endWithin time.Duration // how long ending the sessions may take before the reclaim goes on
	log       *slog.Logger
}

// Start reclaims every interval until ctx ends or Stop.
func (r *reclaimer) Start(ctx context.Context) {
	r.start(ctx, func(ctx context.Context) { every(ctx, r.interval, false, r.reclaim) })
}

// reclaim takes back every expired lease, a batch a call, up to reclaimRounds
// calls; the pools are woken after each call that took some back, so they
// claim those tasks while the next batch is read.
func (r *reclaimer) reclaim(ctx context.Context) {
	if r.ender != nil {
		ctx = queue.WithLostSessionEnder(ctx, r.endSessions)
	}
	for range reclaimRounds {
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
		// A short batch: none left, or the rest are being finished or were
		// renewed (the store skips those), which the next tick sees again.
		if len(res) < reclaimBatch {
			return
		}
	}
}

// endSessions ends the target sessions the lost attempts may still run on.
func (r *reclaimer) endSessions(ctx context.Context, lost []queue.Attempt) {
	names := make([]string, len(lost))
	tasks := make([]int64, len(lost))
	for i, a := range lost {
		names[i], tasks[i] = queue.AttemptSessionName(a.Lease), a.TaskID
	}
	ctx, cancel := context.WithTimeout(ctx, r.endWithin)
	defer cancel()
	n, err := r.ender.EndSessions(ctx, names)
	if err != nil {
		r.log.Warn("could not end on the target the sessions of tasks whose lease expired: a body of theirs may still "+
			"run there while the tasks run again", "tasks", tasks, "within", r.endWithin, "err", err)
		return
	}
	if n > 0 {
		r.log.Warn("ended target sessions still running the bodies of tasks whose lease expired (their node stopped "+
			"answering: frozen or cut off), so that they do not run beside the tasks' next attempts", "sessions", n, "tasks", tasks)
	}
}
