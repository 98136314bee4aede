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
//
// A body's batches carry the attempt's marker at their head, and its session's
// name is left alone (naming it was a statement of its own on every task); a
// target whose sessions do not show their statements (track_activities off)
// names the session instead, and its sessions are found by that.
func TestEndSessionsEndsOnlyTheNamedSession(t *testing.T) {
	t.Parallel()
	for _, tracked := range []bool{true, false} {
		t.Run(map[bool]string{true: "marked", false: "untracked_named"}[tracked], func(t *testing.T) {
			t.Parallel()
			endsOnlyTheNamedSession(t, tracked)
		})
	}
}

func endsOnlyTheNamedSession(t *testing.T, tracked bool) {
	dsn := testenv.NewDSN(t, testenv.Postgres)
	ctx := t.Context()
	if !tracked {
		admin, err := pgx.Connect(ctx, dsn)
		require.NoError(t, err)
		_, err = admin.Exec(ctx, "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET track_activities = off', current_database()); END $$")
		require.NoError(t, err, "the test's role may set track_activities for its database")
		require.NoError(t, admin.Close(ctx))
	}
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
	// named counts the sessions named name; marked, those whose statement
	// starts with its marker.
	named := func(name string) int {
		var n int
		require.NoError(t, watcher.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND application_name = $1`, name).Scan(&n))
		return n
	}
	marked := func(name string) int {
		var n int
		require.NoError(t, watcher.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND starts_with(query, $1)`, "/* "+name+" */ ").Scan(&n))
		return n
	}
	found := marked
	if !tracked {
		found = named
	}
	require.Eventually(t, func() bool { return found(lost) == 1 && found(other) == 1 }, 10*time.Second, 10*time.Millisecond,
		"both bodies run in sessions marked with their attempts")
	if tracked {
		require.Zero(t, named(lost)+named(other), "a tracked target's sessions keep their own name")
	}

	n, err := ender.EndSessions(ctx, []string{lost, "readpast task 3 lease 9"})
	require.NoError(t, err)
	require.Equal(t, 1, n, "one session carried a lost name")
	require.Zero(t, found(lost), "the session is gone when EndSessions returns")
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
	require.Zero(t, found(other), "a body's session has its mark only while the body runs")
}
