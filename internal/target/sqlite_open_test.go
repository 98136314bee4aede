package target_test

import (
	"testing"

	"readpast/internal/target"
	"readpast/internal/testenv"
)

// Several targets opened at once on one new file (a node's store, default
// and named targets on the embedded default, checked together; or two
// nodes starting together) all open: each switches the file to WAL, and
// SQLite answers one of two such switches SQLITE_BUSY at once, without its
// busy timeout, to avoid a deadlock. CI saw "database is locked" from
// TestSetChecksEveryTarget before the open retried.
func TestSQLiteTargetsOpenTogetherOnANewFile(t *testing.T) {
	t.Parallel()
	testenv.OpenTogetherOnNewFiles(t, 20, 8, func(path string) error {
		tgt, err := target.Open(t.Context(), "sqlite://"+path)
		if err != nil {
			return err
		}
		_, err = tgt.Run(t.Context(), "SELECT 1", nil)
		_ = tgt.Close()
		return err
	})
}
