package queue_test

import (
	"context"
	"path/filepath"
	"testing"

	"readpast/internal/queue"
	"readpast/internal/queue/open"
	"readpast/internal/queue/sqlite"
)

// A store from open.Store is behind queue.Checked, which hides what one
// dialect offers beside the Store interface (SQL Server's count of sessions
// opened, which /metrics reads): Unwrap reaches the dialect's store. Without
// it the metric was silently missing in a node (found over TDS).
func TestUnwrapReachesTheDialectsStore(t *testing.T) {
	ctx := context.Background()
	s, err := open.Store(ctx, "sqlite://"+filepath.Join(t.TempDir(), "u.db"), queue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, ok := s.(*sqlite.Store); ok {
		t.Fatal("open.Store returned the dialect's store unwrapped: the shared checks would be skipped")
	}
	if _, ok := queue.Unwrap(s).(*sqlite.Store); !ok {
		t.Fatalf("Unwrap returned %T, want *sqlite.Store", queue.Unwrap(s))
	}
	if inner := queue.Unwrap(s); queue.Unwrap(inner) != inner {
		t.Fatal("Unwrap of an unwrapped store must return it")
	}
}
