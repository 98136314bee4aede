package queue

import (
	"context"
	"time"
)

// WriteTimeout bounds one store write once it has been sent.
const WriteTimeout = 30 * time.Second

// Detached returns the context a store write runs under once it has a
// connection: not cancelled with ctx, so a write that was sent runs to its end
// and its result is read (a claim cut off after its commit would lease tasks
// to nobody, an enqueue cut off after its commit would be sent again), and
// bounded by WriteTimeout. Waiting for a connection still follows ctx, so a
// stopping node does not wait for a busy database. A dialect discards a
// connection whose request the timeout interrupted.
func Detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), WriteTimeout)
}
