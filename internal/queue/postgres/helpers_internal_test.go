package postgres

import (
	"context"
	"testing"
	"time"

	"readpast/internal/queue"
	"readpast/internal/testpg"
)

// openStore opens an unmigrated store on a new database of the shared test
// server, for the tests of this package's internals (the shared suite runs in
// postgres_test through testenv, which this package's own tests cannot import).
func openStore(t *testing.T) *Store {
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

// newStore is openStore's store as open.Store gives it: behind queue.Checked.
func newStore(t *testing.T) queue.Store { return checked(openStore(t)) }

// checked is s behind the checks every dialect shares (queue.Checked), as
// production calls it: s's own methods take checked values only.
func checked(s *Store) queue.Store { return queue.Checked(s, s.opts) }

// migratedStore is openStore's store with its schema, migrated under ctx.
func migratedStore(t *testing.T, ctx context.Context) *Store {
	t.Helper()
	s := openStore(t)
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("migrating: %v", err)
	}
	return s
}
