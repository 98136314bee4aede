package workers

import (
	"context"
	"log/slog"
)

// listener wakes the node's idle pools when any node enqueues, on stores that
// can say so (PostgreSQL's LISTEN/NOTIFY on a connection of its own);
// elsewhere it does nothing and the pools poll. A listener that fails leaves
// the node polling, which is slower to start a task but loses nothing.
type listener struct {
	lifecycle
	store Store
	wake  func(queue string)
	log   *slog.Logger
}

// Start listens until ctx ends or Stop, when the store can.
func (l *listener) Start(ctx context.Context) {
	if !l.store.Capabilities().Listen {
		return
	}
	l.start(ctx, func(ctx context.Context) {
		if err := l.store.Listen(ctx, l.wake); err != nil && ctx.Err() == nil {
			l.log.Warn("listening for enqueues stopped; polling only", "err", err)
		}
	})
}
