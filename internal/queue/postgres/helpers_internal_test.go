package postgres

import (
	"context"
	"testing"
	"time"

	"readpast/internal/queue"
	"readpast/internal/testpg"
)

// newStore opens an unmigrated store on a new database of the shared test
// server, for the tests of this package's internals (the shared suite runs in
// postgres_test through testenv, which this package's own tests cannot import).
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

// migratedStore is newStore's store with its schema, migrated under ctx.
func migratedStore(t *testing.T, ctx context.Context) *Store {
	t.Helper()
	s := newStore(t).(*Store)
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("migrating: %v", err)
	}
	return s
}
