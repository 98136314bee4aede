package testenv

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// OpenTogetherOnNewFiles calls open n times at once on the path of one new
// SQLite file, in each of rounds rounds, and fails t if any call fails: what
// node processes started together on the embedded default do, each
// connection switching the new file to WAL (sqlrun.PingSQLite).
func OpenTogetherOnNewFiles(t *testing.T, rounds, n int, open func(path string) error) {
	t.Helper()
	for round := range rounds {
		path := filepath.Join(t.TempDir(), "together.db")
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- open(path)
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err, "round %d", round)
		}
	}
}
