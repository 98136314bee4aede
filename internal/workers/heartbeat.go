package workers

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"readpast/internal/queue"
)

// heartbeater keeps the node's leases alive (asynq's heartbeat.go): every
// quarter of the lease (Config.heartbeatEvery) it extends every lease the
// node holds in one store call, stops the executions whose lease was lost
// (another holder owns the task now) or whose cancellation an operator
// requested on another node, and refreshes the node's own row with a snapshot
// of its pools. It runs until the node has drained, so the leases of tasks
// still finishing stay alive. Each answered beat tells the fence when it was
// sent (fence.go): a lease lasts from then, not from the answer.
type heartbeater struct {
	lifecycle
	store    Store
	pools    *poolSet
	fence    *fence
	nodeID   string
	lease    time.Duration
	interval time.Duration
	info     func() string // the node's snapshot, as JSON
	// register writes the node's row anew, for a row that retention deleted
	// while the node was silent (queue.NodesGoneKept).
	register func(context.Context) error
	log      *slog.Logger
}

// Start beats every interval until ctx ends or Stop.
func (h *heartbeater) Start(ctx context.Context) {
	h.start(ctx, func(ctx context.Context) { every(ctx, h.interval, false, h.beat) })
}

// beat is one heartbeat, bounded by the interval so that a slow store never
// stacks them.
func (h *heartbeater) beat(ctx context.Context) {
	callCtx, cancel := context.WithTimeout(ctx, h.interval)
	defer cancel()
	if leases := h.pools.leases(); len(leases) > 0 {
		sent := time.Now()
		res, err := h.store.Heartbeat(callCtx, leases, h.lease)
		switch {
		case err != nil && ctx.Err() == nil:
			h.log.Warn("heartbeating leases", "count", len(leases), "err", err)
		case err == nil:
			h.pools.stop(res.Lost, errLeaseLost)
			h.pools.stop(res.CancelRequested, errCancelled)
			h.pools.renewed(leases, res.Lost, sent)
			h.fence.answered(sent)
		}
	}
	sent := time.Now()
	err := h.store.HeartbeatNode(callCtx, h.nodeID, h.info())
	if errors.Is(err, queue.ErrNotFound) {
		h.log.Info("the node's row was gone (retention purges nodes silent for longer than its NodeAge); registering again", "node", h.nodeID)
		err = h.register(callCtx)
	}
	if err == nil {
		h.fence.answered(sent)
	} else if ctx.Err() == nil {
		h.log.Warn("heartbeating node", "err", err)
	}
}
