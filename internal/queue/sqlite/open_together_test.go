package sqlite_test

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/queue/sqlite"
)

// Several stores opened at once on one new file (node processes started
// together on the embedded default) all open: each connection switches the
// file to WAL, and SQLite answers one of two such switches SQLITE_BUSY at
// once, without its busy timeout (sqlrun.PingSQLite).
func TestStoresOpenTogetherOnANewFile(t *testing.T) {
	t.Parallel()
	for round := range 20 {
		path := filepath.Join(t.TempDir(), "together.db")
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s, err := sqlite.Open(t.Context(), path, queue.Options{})
				if err == nil {
					err = s.Close()
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
