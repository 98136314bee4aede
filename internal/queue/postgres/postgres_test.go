package postgres

import (
	"context"
	"os"
	"testing"
	"time"

	"readpast/internal/queue"
	"readpast/internal/queue/queuetest"
	"readpast/internal/testpg"
)

func TestMain(m *testing.M) { os.Exit(testpg.Main(m)) }

// TestConformance runs the shared suite on a private PostgreSQL server, one fresh
// database per test.
func TestConformance(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		queuetest.Exercise(t, queuetest.Harness{NewStore: newStore, Exec: execSQL})
	})
}

// newStore opens an unmigrated store on a new database; it closes before the
// database is dropped (cleanups run last-in first-out).
func newStore(t *testing.T) queue.Store {
	t.Helper()
	dsn := testpg.Shared(t).NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Open(ctx, dsn, queue.Options{})
	if err != nil {
		t.Fatalf("opening the store: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func execSQL(t *testing.T, s queue.Store, query string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := s.(*Store).pool.Exec(ctx, query); err != nil {
		t.Fatalf("running %q: %v", query, err)
	}
}
