package target_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"readpast/internal/target"
	"readpast/internal/testenv"
)

// EndSessions ends the session that carries a lost attempt's name and no
// other: not another body's, not a session ReadPast did not name (on a DBA's
// server, someone else's). A body's session has its name only while the body
// runs. The first version ran pg_terminate_backend in a WHERE the planner
// folded together with the name's test, and ended every session of the
// server: the unrelated sessions here would have gone with it.
func TestEndSessionsEndsOnlyTheNamedSession(t *testing.T) {
	t.Parallel()
	dsn := testenv.NewDSN(t, testenv.Postgres)
	ctx := t.Context()
	tgt, err := target.Open(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { tgt.Close() })
	ender, ok := tgt.(target.SessionEnder)
	require.True(t, ok, "a PostgreSQL target ends sessions")

	const lost, other = "readpast task 1 lease 7", "readpast task 2 lease 8"
	ended := make(chan error, 1)
	go func() {
		_, err := tgt.Run(target.WithSessionName(ctx, lost), "SELECT 1\nGO\nSELECT pg_sleep(30)", nil)
		ended <- err
	}()
	otherDone := make(chan error, 1)
	go func() {
		_, err := tgt.Run(target.WithSessionName(ctx, other), "SELECT pg_sleep(2)", nil)
		otherDone <- err
	}()
	// A session of someone else's, busy, and the test's own, idle.
	stranger, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer stranger.Close(context.Background())
	strangerDone := make(chan error, 1)
	go func() { _, err := stranger.Exec(ctx, "SELECT pg_sleep(2)"); strangerDone <- err }()
	watcher, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer watcher.Close(context.Background())
	named := func(name string) int {
		var n int
		require.NoError(t, watcher.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND application_name = $1`, name).Scan(&n))
		return n
	}
	require.Eventually(t, func() bool { return named(lost) == 1 && named(other) == 1 }, 10*time.Second, 10*time.Millisecond,
		"both bodies run in sessions named after their attempts")

	n, err := ender.EndSessions(ctx, []string{lost, "readpast task 3 lease 9"})
	require.NoError(t, err)
	require.Equal(t, 1, n, "one session carried a lost name")
	require.Zero(t, named(lost), "the session is gone when EndSessions returns")
	select {
	case err := <-ended:
		require.Error(t, err)
		require.True(t, target.SessionLost(err), "the body's session was lost: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the lost body still runs")
	}
	require.NoError(t, <-otherDone, "the other body ran to its end")
	require.NoError(t, <-strangerDone, "a session ReadPast did not name is never ended")
	require.NoError(t, watcher.Ping(ctx))
	require.Zero(t, named(other), "a body's session has its name only while the body runs")
}
