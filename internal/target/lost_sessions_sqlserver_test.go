package target_test

import (
	"context"
	"database/sql"
	"os"
	"strings"
	"testing"
	"time"

	mssql "github.com/microsoft/go-mssqldb"
	"github.com/stretchr/testify/require"

	"readpast/internal/target"
	"readpast/internal/testenv"
)

// On SQL Server, EndSessions ends the session whose body carries a lost
// attempt's name (CONTEXT_INFO) and no other: not another body's, not a
// session ReadPast did not name. The bodies wait on a lock the test holds,
// a wait that runs until something ends it (Babelfish has no WAITFOR). KILL
// needs ALTER ANY CONNECTION on SQL Server: a login without it skips, after
// checking the server refused for that reason (Babelfish lets a login end
// its own sessions, as pg_terminate_backend does).
func TestEndSessionsEndsOnlyTheNamedSessionSQLServer(t *testing.T) {
	t.Parallel()
	if os.Getenv(testenv.MSSQLDSNEnv) == "" {
		t.Skip(testenv.MSSQLDSNEnv + " is not set")
	}
	dsn := testenv.NewDSN(t, testenv.SQLServer)
	ctx := t.Context()
	tgt, err := target.Open(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { tgt.Close() })
	ender, ok := tgt.(target.SessionEnder)
	require.True(t, ok, "a SQL Server target ends sessions")

	connector, err := mssql.NewConnector(dsn)
	require.NoError(t, err)
	db := sql.OpenDB(connector)
	t.Cleanup(func() { db.Close() })
	_, err = db.ExecContext(ctx, "CREATE TABLE lost_probe (id int PRIMARY KEY, v int NOT NULL); INSERT INTO lost_probe VALUES (1, 0), (2, 0), (3, 0);")
	require.NoError(t, err)
	holder, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer holder.Rollback() //nolint:errcheck // released below; a second rollback is a no-op
	_, err = holder.ExecContext(ctx, "UPDATE lost_probe SET v = v + 1;")
	require.NoError(t, err)

	const lost, other = "readpast task 1 lease 7", "readpast task 2 lease 8"
	ended := make(chan error, 1)
	go func() {
		_, err := tgt.Run(target.WithSessionName(ctx, lost), "SELECT 1\nGO\nUPDATE lost_probe SET v = v + 1 WHERE id = 1;", nil)
		ended <- err
	}()
	otherDone := make(chan error, 1)
	go func() {
		_, err := tgt.Run(target.WithSessionName(ctx, other), "UPDATE lost_probe SET v = v + 1 WHERE id = 2;", nil)
		otherDone <- err
	}()
	// A session of someone else's, waiting too, and the test's own, idle.
	stranger, err := db.Conn(ctx)
	require.NoError(t, err)
	defer stranger.Close()
	strangerDone := make(chan error, 1)
	go func() {
		_, err := stranger.ExecContext(ctx, "UPDATE lost_probe SET v = v + 1 WHERE id = 3;")
		strangerDone <- err
	}()
	watcher, err := db.Conn(ctx)
	require.NoError(t, err)
	defer watcher.Close()
	// Sessions carrying name. Babelfish lists a session that has just ended
	// for a moment longer, with no session id: that is no session.
	named := func(name string) int {
		var n int
		require.NoError(t, watcher.QueryRowContext(ctx, `SELECT count(*) FROM sys.dm_exec_sessions
			WHERE session_id IS NOT NULL AND SUBSTRING(context_info, 1, @p1) = @p2`, len(name)+1, append([]byte(name), 0)).Scan(&n))
		return n
	}
	require.Eventually(t, func() bool { return named(lost) == 1 && named(other) == 1 }, 30*time.Second, 20*time.Millisecond,
		"both bodies run in sessions named after their attempts")
	select { // each waits on the holder's lock
	case err := <-ended:
		t.Fatalf("the lost body ended before its session was: %v", err)
	case err := <-otherDone:
		t.Fatalf("the other body ended while the lock was held: %v", err)
	case err := <-strangerDone:
		t.Fatalf("the stranger's statement ended while the lock was held: %v", err)
	case <-time.After(500 * time.Millisecond):
	}

	n, err := ender.EndSessions(ctx, []string{lost, "readpast task 3 lease 9"})
	if err != nil && strings.Contains(err.Error(), "permission") {
		t.Skipf("this login may not KILL (SQL Server: ALTER ANY CONNECTION): %v", err)
	}
	require.NoError(t, err)
	require.Equal(t, 1, n, "one session carried a lost name")
	require.Zero(t, named(lost), "the session is gone when EndSessions returns")
	select {
	case err := <-ended:
		require.Error(t, err)
		require.True(t, target.SessionLost(err), "the body's session was lost: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the lost body still runs")
	}
	require.Equal(t, 1, named(other), "the other body still runs")
	require.NoError(t, holder.Rollback())
	require.NoError(t, <-otherDone, "the other body ran to its end")
	require.NoError(t, <-strangerDone, "a session ReadPast did not name is never ended")
	require.NoError(t, watcher.PingContext(context.Background()))
	require.Zero(t, named(other), "a body's session has its name only while the body runs")
}
