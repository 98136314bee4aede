package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
)

// A purge commits without waiting for the disk; every other write on the one
// writer connection must wait for it again afterwards (synchronous FULL = 2).
func TestPurgesLeaveTheWriterDurable(t *testing.T) {
	ctx := context.Background()
	s := migratedStore(t, ctx)
	synchronous := func() int {
		var v int
		require.NoError(t, s.w.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&v))
		return v
	}
	require.Equal(t, 2, synchronous(), "writes wait for the disk")
	_, err := checked(s).PurgeTasks(ctx, time.Now(), 100)
	require.NoError(t, err)
	require.Equal(t, 2, synchronous(), "after purging tasks")
	_, err = checked(s).PurgeAttempts(ctx, time.Now(), 100)
	require.NoError(t, err)
	require.Equal(t, 2, synchronous(), "after purging the log")
	// A purge that fails inside its transaction restores it too.
	_, err = checked(s).PurgeTasks(ctx, time.Now(), queue.MaxPurgeBatch+1)
	require.Error(t, err)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, _ = checked(s).PurgeTasks(cancelled, time.Now(), 100)
	require.Equal(t, 2, synchronous(), "after a cancelled purge")
}

// migratedStore is a store on a fresh file of the test's, migrated.
func migratedStore(t *testing.T, ctx context.Context) *Store {
	t.Helper()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "q.db"), queue.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	require.NoError(t, s.Migrate(ctx))
	return s
}

// checked is s behind the checks every dialect shares (queue.Checked), as
// production calls it: s's own methods take checked values only.
func checked(s *Store) queue.Store { return queue.Checked(s, s.opts) }
