package target

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSQLiteRefusesABodyThatLeavesATransactionOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tgt, err := Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "t.db"))
	require.NoError(t, err)
	defer tgt.Close()
	_, err = tgt.Run(ctx, "CREATE TABLE t (n int)", nil)
	require.NoError(t, err)
	_, err = tgt.Run(ctx, "BEGIN;\nINSERT INTO t VALUES (1);", nil)
	require.ErrorIs(t, err, errOpenTransaction, "work that was rolled back must not count as a success")
	res, err := tgt.Run(ctx, "INSERT INTO t VALUES (2);\nGO\nINSERT INTO t SELECT n + 1 FROM t", nil)
	require.NoError(t, err, "the next run starts clean")
	require.Equal(t, int64(2), res.RowsAffected, "the rolled-back row is gone; rows are summed over batches")
}

func TestSQLiteInterruptsAtTheDeadline(t *testing.T) {
	t.Parallel()
	tgt, err := Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "t.db"))
	require.NoError(t, err)
	defer tgt.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = tgt.Run(ctx, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c", nil)
	require.Error(t, err, "an endless statement must be interrupted")
	require.Less(t, time.Since(start), 5*time.Second)
}
