package target_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"readpast/internal/target"
	"readpast/internal/testenv"
)

const setPassword = "Set-9pw-Unseen"

// A node's set on every dialect: the store and a named target are checked
// (reachable, with the server's version and a latency), a target that is
// down is unreachable with an error that holds no password, and the named
// target runs bodies.
func TestSetChecksEveryTarget(t *testing.T) {
	t.Parallel()
	testenv.ForEachDialectDSN(t, func(t *testing.T, e *testenv.Env) {
		down := "postgres://u:" + setPassword + "@127.0.0.1:1/none?connect_timeout=2"
		set, err := target.NewSet("n1", e.DSN, "", []target.Spec{
			{Name: "db1", DSN: e.DSN, Tags: []string{"prod"}, Pool: 2},
			{Name: "down", DSN: down},
		}, nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = set.Close() })
		require.Equal(t, []string{"store", "default", "db1", "down"}, set.Names())
		require.True(t, set.IsStore("default"), "no --target-dsn: the default is the store")
		require.True(t, set.IsStore("db1"), "db1's DSN is the store's")
		require.Equal(t, []string{"db1"}, set.Tagged("prod"))
		set.Check(e.Ctx)
		for _, n := range []string{"store", "default", "db1"} {
			st, ok := set.Status(n)
			require.True(t, ok)
			require.True(t, st.Reachable, "%s: %s", n, st.Error)
			require.NotEmpty(t, st.Version, n)
			require.Positive(t, st.LatencyMS, n)
		}
		st, _ := set.Status("down")
		require.False(t, st.Reachable)
		require.NotEmpty(t, st.Error)
		require.NotContains(t, st.Error, setPassword)
		// PostgreSQL pools connect on first use: the open succeeds, the run fails.
		if dt, err2 := set.Get(e.Ctx, "down"); err2 == nil {
			_, err = dt.Run(e.Ctx, "SELECT 1", nil)
		} else {
			err = err2
		}
		require.Error(t, err)
		require.NotContains(t, err.Error(), setPassword)
		require.False(t, target.SessionLost(err), "a target that cannot be reached is not a lost session: the attempt fails and backs off")
		_, err = set.Get(e.Ctx, "nosuch")
		require.ErrorIs(t, err, target.ErrNotServed)
		tgt, err := set.Get(e.Ctx, "db1")
		require.NoError(t, err)
		_, err = tgt.Run(e.Ctx, "CREATE TABLE via_set (n int)", nil)
		require.NoError(t, err)
	})
}

// The activity of a task's session blocked by another session names the
// blocker and what the task waits on (PostgreSQL: pg_stat_activity and
// pg_blocking_pids; SQL Server: sys.dm_exec_requests). SQLite has no view
// of other sessions.
func TestActivityShowsTheBlocker(t *testing.T) {
	t.Parallel()
	testenv.ForEachDialectDSN(t, func(t *testing.T, e *testenv.Env) {
		set, err := target.NewSet("n1", e.DSN, "", []target.Spec{{Name: "db1", DSN: e.DSN}}, nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = set.Close() })
		tgt, err := set.Get(e.Ctx, "db1")
		require.NoError(t, err)
		_, err = tgt.Run(e.Ctx, "CREATE TABLE blk (n int)\nGO\nINSERT INTO blk VALUES (1)", nil)
		require.NoError(t, err)
		if e.Dialect == testenv.SQLite {
			rep, err := set.Activity(e.Ctx, "db1", []string{"1"})
			require.NoError(t, err)
			require.True(t, rep.Unsupported)
			return
		}
		blocker, release := testenv.HoldRows(t, e.Dialect, e.DSN, "blocker", "UPDATE blk SET n = 2")
		defer release()
		ctx, cancel := context.WithTimeout(e.Ctx, time.Minute)
		defer cancel()
		sid := make(chan string, 1)
		done := make(chan error, 1)
		go func() {
			_, err := tgt.Run(ctx, "UPDATE blk SET n = 3", func(id string) { sid <- id })
			done <- err
		}()
		task := <-sid
		var rep target.ActivityReport
		var mine target.Activity
		require.Eventually(t, func() bool {
			rep, err = set.Activity(e.Ctx, "db1", []string{task})
			require.NoError(t, err)
			if rep.Missing != "" {
				return true
			}
			for _, a := range rep.Sessions {
				if a.SessionID == task {
					mine = a
				}
			}
			return len(mine.BlockedBy) > 0
		}, 30*time.Second, 200*time.Millisecond, "the task's session waits on the blocker")
		if rep.Missing != "" {
			// A login without VIEW SERVER STATE, or Babelfish (no DMVs): the
			// report says what is missing instead of showing idle sessions.
			require.Equal(t, testenv.SQLServer, e.Dialect, "PostgreSQL always shows its own sessions")
			t.Skipf("this server shows no other session's requests: %s", rep.Missing)
		}
		require.Equal(t, []string{blocker}, mine.BlockedBy)
		require.NotEmpty(t, mine.Wait)
		if e.Dialect == testenv.Postgres {
			require.True(t, strings.HasPrefix(mine.Wait, "Lock:"), mine.Wait)
			require.Equal(t, "active", mine.State)
		} else {
			require.True(t, strings.HasPrefix(mine.Wait, "LCK_M_"), mine.Wait)
			require.Equal(t, "UPDATE", mine.Command)
		}
		require.Contains(t, mine.Statement, "UPDATE blk")
		found := false
		for _, a := range rep.Sessions {
			if a.SessionID == blocker {
				found = true
				require.Contains(t, a.Application, "blocker")
			}
		}
		require.True(t, found, "the blocker's own session is listed: %+v", rep.Sessions)
		release()
		require.NoError(t, <-done)
	})
}

// A PostgreSQL target whose sessions do not show their statements
// (track_activities off) cannot mark a body's session by its statement: the
// node says so once, with what to do, and not for a target that shows them.
func TestSetWarnsOnceOfAnUntrackedTarget(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tracked := testenv.NewDSN(t, testenv.Postgres)
	untracked := testenv.NewDSN(t, testenv.Postgres)
	admin, err := pgx.Connect(ctx, untracked)
	require.NoError(t, err)
	_, err = admin.Exec(ctx, "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET track_activities = off', current_database()); END $$")
	require.NoError(t, err)
	require.NoError(t, admin.Close(ctx))

	var mu sync.Mutex
	var out bytes.Buffer
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return out.Write(p)
	}), nil))
	set, err := target.NewSet("n1", tracked, "", []target.Spec{{Name: "quiet", DSN: untracked}}, log)
	require.NoError(t, err)
	t.Cleanup(func() { _ = set.Close() })
	set.Check(ctx)
	set.Check(ctx)
	mu.Lock()
	logged := out.String()
	mu.Unlock()
	require.Equal(t, 1, strings.Count(logged, "track_activities is off"), "warned once, for the untracked target only: %s", logged)
	require.Contains(t, logged, "target=quiet")
	require.Contains(t, logged, "ALTER ROLE")
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
