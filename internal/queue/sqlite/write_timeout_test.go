package sqlite

import (
	"context"
	"database/sql"
	"testing"

	"github.com/stretchr/testify/require"
)

// A write whose time ran out says so, instead of only what database/sql
// reports for the statement after the rollback.
func TestAWriteThatTimedOutSaysSo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 0)
	defer cancel()
	<-ctx.Done()
	err := timedOut(ctx, sql.ErrTxDone)
	require.ErrorIs(t, err, sql.ErrTxDone)
	require.Contains(t, err.Error(), "ran past the store's write timeout")
	require.Equal(t, sql.ErrTxDone, timedOut(context.Background(), sql.ErrTxDone), "a write with time left is reported as it failed")
}
