package sqlite_test

import (
	"testing"

	"readpast/internal/queue"
	"readpast/internal/queue/sqlite"
	"readpast/internal/testenv"
)

// Several stores opened at once on one new file (node processes started
// together on the embedded default) all open: each connection switches the
// file to WAL, and SQLite answers one of two such switches SQLITE_BUSY at
// once, without its busy timeout (sqlrun.PingSQLite).
func TestStoresOpenTogetherOnANewFile(t *testing.T) {
	t.Parallel()
	testenv.OpenTogetherOnNewFiles(t, 20, 8, func(path string) error {
		s, err := sqlite.Open(t.Context(), path, queue.Options{})
		if err != nil {
			return err
		}
		return s.Close()
	})
}
