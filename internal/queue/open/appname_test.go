package open_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/testenv"
)

// The store's sessions name ReadPast, the role and the node.
func TestStoreSessionsNameThemselves(t *testing.T) {
	t.Parallel()
	testenv.ForEachDialectDSN(t, func(t *testing.T, e *testenv.Env) {
		if e.Dialect == testenv.SQLite {
			t.Skip("SQLite has no server sessions to name")
		}
		s := testenv.OpenStore(t, e.DSN, queue.Options{Node: "node-7"})
		require.NoError(t, s.Migrate(e.Ctx))
		query := "SELECT DISTINCT application_name FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE 'ReadPast%'"
		if e.Dialect == testenv.SQLServer {
			query = "SELECT DISTINCT program_name FROM sys.dm_exec_sessions WHERE database_id = DB_ID() AND program_name LIKE 'ReadPast%'"
		}
		require.Equal(t, []string{"ReadPast store node-7"}, testenv.QueryStrings(t, e.Dialect, e.DSN, query),
			"every session the store holds open is named for its node")
	})
}
