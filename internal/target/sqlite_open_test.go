package target_test

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"readpast/internal/target"
)

// Several targets opened at once on one new file (a node's store, default
// and named targets on the embedded default, checked together; or two
// nodes starting together) all open: each switches the file to WAL, and
// SQLite answers one of two such switches SQLITE_BUSY at once, without its
// busy timeout, to avoid a deadlock. CI saw "database is locked" from
// TestSetChecksEveryTarget before the open retried.
func TestSQLiteTargetsOpenTogetherOnANewFile(t *testing.T) {
	t.Parallel()
	for round := range 20 {
		path := filepath.Join(t.TempDir(), "together.db")
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tgt, err := target.Open(t.Context(), "sqlite://"+path)
				if err == nil {
					_, err = tgt.Run(t.Context(), "SELECT 1", nil)
					_ = tgt.Close()
				}
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err, "round %d", round)
		}
	}
}
