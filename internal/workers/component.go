package workers

import (
	"context"
	"sync"
	"time"
)

// component is one background part of a node, each in a file of its own
// (heartbeat.go, reclaim.go, settings.go, retention.go, listen.go,
// finisher.go), with one contract (River's startstop, asynq's heartbeater,
// recoverer and janitor): Start launches its goroutine and returns at once;
// the goroutine runs until ctx ends or Stop is called; Stop returns once the
// goroutine has ended. Stopping twice, or stopping what never started, does
// nothing, and a component starts at most once. Node.Run gives the order.
type component interface {
	Start(ctx context.Context)
	Stop()
}

// lifecycle is the start and stop bookkeeping the components share: one
// goroutine, a context that Stop cancels, and a Stop that waits for it.
type lifecycle struct {
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// start runs fn in a goroutine of its own with a context that Stop cancels;
// after the first call it does nothing.
func (l *lifecycle) start(ctx context.Context, fn func(ctx context.Context)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done != nil {
		return
	}
	ctx, l.cancel = context.WithCancel(ctx)
	done := make(chan struct{})
	l.done = done
	go func() {
		defer close(done)
		fn(ctx)
	}()
}

// Stop ends the goroutine and waits for it; it is safe to call twice, or
// before start.
func (l *lifecycle) Stop() {
	l.mu.Lock()
	cancel, done := l.cancel, l.done
	l.mu.Unlock()
	if done == nil {
		return
	}
	cancel()
	<-done
}

// every calls tick each interval (and once at once when first is set) until
// ctx ends.
func every(ctx context.Context, interval time.Duration, first bool, tick func(ctx context.Context)) {
	if first {
		tick(ctx)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			tick(ctx)
		}
	}
}
