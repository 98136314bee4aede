package target_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"readpast/internal/target"
	"readpast/internal/testenv"
)

// sessionName is the query that reads, over a connection of its own, the
// application name of the session whose id a task attempt records: the join a
// DBA makes from the execution log to the server's session list.
func sessionName(d testenv.Dialect, id string) string {
	if d == testenv.SQLServer {
		return "SELECT program_name FROM sys.dm_exec_sessions WHERE session_id = " + id
	}
	return "SELECT application_name FROM pg_stat_activity WHERE pid = " + id
}

// A worker's session names ReadPast, the role and the node, and the session id
// a run reports finds it; a DSN that names its sessions keeps its name.
func TestWorkerSessionsNameThemselves(t *testing.T) {
	t.Parallel()
	testenv.ForEachDialectDSN(t, func(t *testing.T, e *testenv.Env) {
		if e.Dialect == testenv.SQLite {
			t.Skip("SQLite has no server sessions to name")
		}
		tgt, err := target.OpenOnNode(e.Ctx, e.DSN, "node-7")
		require.NoError(t, err)
		defer tgt.Close()
		res, err := tgt.Run(e.Ctx, "SELECT 1", nil)
		require.NoError(t, err)
		require.Equal(t, []string{"ReadPast worker node-7"}, testenv.QueryStrings(t, e.Dialect, e.DSN, sessionName(e.Dialect, res.SessionID)),
			"the session the run reports is named for ReadPast's worker on its node")

		own := e.DSN + "&application_name=nightly-etl"
		if e.Dialect == testenv.SQLServer {
			own = e.DSN + "&app+name=nightly-etl"
		}
		mine, err := target.OpenOnNode(e.Ctx, own, "node-7")
		require.NoError(t, err)
		defer mine.Close()
		res, err = mine.Run(e.Ctx, "SELECT 1", nil)
		require.NoError(t, err)
		require.Equal(t, []string{"nightly-etl"}, testenv.QueryStrings(t, e.Dialect, e.DSN, sessionName(e.Dialect, res.SessionID)),
			"a name the DSN sets stands")
	})
}
