package testenv

import (
	"context"
	"testing"
	"time"
)

// Runner is a node, as workers.Node runs: testenv does not import workers,
// whose own tests use this package.
type Runner interface {
	Run(ctx context.Context) error
	Ready() <-chan struct{}
}

// StartNode runs n until the test ends (or stop is called) and waits until it
// is ready. stop stops it gracefully and waits for Run to return.
func StartNode(t *testing.T, n Runner) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = n.Run(ctx) }()
	select {
	case <-n.Ready():
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("node did not become ready within 30s")
	}
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return stop
}
