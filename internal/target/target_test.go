package target

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/testpg"
)

func TestMain(m *testing.M) { os.Exit(testpg.Main(m)) }

// env is one dialect's target on a fresh database.
type env struct {
	ctx     context.Context
	dialect string
	dsn     string
	target  Target
}

// dialects runs fn once per dialect, as parallel subtests.
func dialects(t *testing.T, fn func(t *testing.T, e env)) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		fn(t, newEnv(t, "sqlite://"+filepath.Join(t.TempDir(), "t.db")))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		fn(t, newEnv(t, testpg.Shared(t).NewDatabase(t)))
	})
}

func newEnv(t *testing.T, dsn string) env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	tgt, err := Open(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { tgt.Close() })
	return env{ctx: ctx, dialect: tgt.Dialect(), dsn: dsn, target: tgt}
}

// pgQuery runs one query on a connection of its own (not the target's pool)
// and scans its single row into dest.
func (e env) pgQuery(t *testing.T, query string, args []any, dest ...any) {
	t.Helper()
	conn, err := pgx.Connect(e.ctx, e.dsn)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	require.NoError(t, conn.QueryRow(e.ctx, query, args...).Scan(dest...))
}

// Rows affected add up over the statements of a batch and over batches split
// on GO lines; a failing batch stops the body and keeps the count so far.
func TestRowsAffectedAddUpOverBatches(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, e env) {
		body := strings.Join([]string{
			"CREATE TABLE r (n int)",
			"go",
			"INSERT INTO r VALUES (1), (2), (3); INSERT INTO r VALUES (4)",
			"  GO  ",
			"UPDATE r SET n = n + 10 WHERE n > 1",
			"GO",
			"DELETE FROM r WHERE n = 1",
		}, "\n")
		res, err := e.target.Run(e.ctx, body, nil)
		require.NoError(t, err)
		require.Equal(t, int64(3+1+3+1), res.RowsAffected)

		res, err = e.target.Run(e.ctx, "UPDATE r SET n = n\nGO\nSELECT * FROM no_such_table\nGO\nDELETE FROM r", nil)
		require.Error(t, err)
		require.Contains(t, err.Error(), "batch 2")
		require.Equal(t, int64(3), res.RowsAffected, "the first batch's rows count; the third batch never ran")
		res, err = e.target.Run(e.ctx, "UPDATE r SET n = n", nil)
		require.NoError(t, err)
		require.Equal(t, int64(3), res.RowsAffected)
	})
}

// On PostgreSQL the session id is the backend pid, reported before the body
// runs, and NOTICEs end up in the messages.
func TestPostgresSessionIDAndNotices(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testpg.Shared(t).NewDatabase(t))
	var early string
	res, err := e.target.Run(e.ctx, `CREATE TABLE pids AS SELECT pg_backend_pid() AS pid
GO
DO $$ BEGIN RAISE NOTICE 'hello'; END $$
GO
DO $$ BEGIN RAISE WARNING 'careful'; END $$`, func(id string) { early = id })
	require.NoError(t, err)
	var pid int
	e.pgQuery(t, `SELECT pid FROM pids`, nil, &pid)
	require.Equal(t, strconv.Itoa(pid), res.SessionID, "the session id is the backend pid")
	require.Equal(t, res.SessionID, early, "onSession gets the id before the body runs")
	require.Equal(t, "NOTICE: hello\nWARNING: careful\n", res.Messages)

	// Messages of one run do not leak into the next run on the same pool.
	res, err = e.target.Run(e.ctx, "SELECT 1", nil)
	require.NoError(t, err)
	require.Empty(t, res.Messages)

	// Messages of a failing body are kept up to the error.
	res, err = e.target.Run(e.ctx, `DO $$ BEGIN RAISE NOTICE 'before'; RAISE EXCEPTION 'boom'; END $$`, nil)
	require.ErrorContains(t, err, "boom")
	require.Equal(t, "NOTICE: before\n", res.Messages)
}

// More than 64 KiB of notices are cut at MaxMessages, ending with the marker.
func TestPostgresMessagesAreCapped(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testpg.Shared(t).NewDatabase(t))
	// 3000 notices of ~110 bytes: about 330 KiB, five times the cap.
	res, err := e.target.Run(e.ctx, `DO $$ BEGIN
		FOR i IN 1..3000 LOOP RAISE NOTICE '% %', lpad(i::text, 5, '0'), repeat('é', 50); END LOOP;
	END $$`, nil)
	require.NoError(t, err)
	require.LessOrEqual(t, len(res.Messages), MaxMessages)
	require.Greater(t, len(res.Messages), MaxMessages-200, "the cap is filled, not left half empty")
	require.True(t, strings.HasSuffix(res.Messages, truncatedMarker), "the cut is marked: ...%q", res.Messages[len(res.Messages)-80:])
	require.True(t, strings.HasPrefix(res.Messages, "NOTICE: 00001 é"), "the first messages are kept")
	require.True(t, utf8Valid(res.Messages), "no character is split by the cut")
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

// A statement still running when the context's deadline passes is cancelled on
// the server: Run returns within seconds, and the backend no longer runs it.
func TestPostgresDeadlineCancelsTheStatementOnTheServer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testpg.Shared(t).NewDatabase(t))
	ctx, cancel := context.WithTimeout(e.ctx, time.Second)
	defer cancel()
	start := time.Now()
	res, err := e.target.Run(ctx, "SELECT pg_sleep(60)", nil)
	took := time.Since(start)
	t.Logf("a 60 s pg_sleep with a 1 s deadline returned after %s: %v", took.Round(time.Millisecond), err)
	require.Error(t, err)
	require.Less(t, took, 4*time.Second, "Run must return within seconds of the deadline")
	require.NotEmpty(t, res.SessionID)

	// The server answered the cancel before Run returned, so the backend is
	// not running the statement any more (it is idle or gone).
	var active int
	e.pgQuery(t, `SELECT count(*) FROM pg_stat_activity
		WHERE (pid = $1 OR query LIKE 'SELECT pg_sleep(60)%') AND state = 'active' AND pid <> pg_backend_pid()`,
		[]any{res.SessionID}, &active)
	require.Zero(t, active, "the server must not still run the statement")
	require.Eventually(t, func() bool {
		var n int
		e.pgQuery(t, `SELECT count(*) FROM pg_stat_activity WHERE pid = $1`, []any{res.SessionID}, &n)
		return n == 0
	}, 3*time.Second, 20*time.Millisecond, "the cancelled connection is closed, not returned to the pool")

	// The pool still works.
	res, err = e.target.Run(e.ctx, "SELECT 1", nil)
	require.NoError(t, err)
	require.Equal(t, int64(1), res.RowsAffected)
}

// A body that leaves a transaction open fails (its work was rolled back, so
// it did not succeed) and does not hand the transaction to the next body that
// runs on the pool: the next body's write commits.
func TestBodyLeavingATransactionOpenDoesNotPoisonThePool(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, e env) {
		for i, body := range []string{
			"BEGIN; SELECT 1",                      // open transaction
			"BEGIN; SELECT 1/0",                    // failed transaction on PostgreSQL (the body fails)
			"BEGIN\nGO\nCREATE TABLE gone (n int)", // open transaction over batches
		} {
			_, err := e.target.Run(e.ctx, body, nil)
			require.Error(t, err, "%q must not count as a success", body)
			if i != 1 || e.dialect == "sqlite" { // SQLite's 1/0 is NULL, no error
				require.ErrorIs(t, err, errOpenTransaction, "%q", body)
			}
			// If the next run inherited the transaction, its write would never commit.
			table := fmt.Sprintf("after_%d", i)
			_, err = e.target.Run(e.ctx, fmt.Sprintf("CREATE TABLE %s (n int); INSERT INTO %[1]s VALUES (1)", table), nil)
			require.NoError(t, err, "after %q", body)
			require.Equal(t, 1, e.count(t, "SELECT count(*) FROM "+table), "after %q the next body's write commits", body)
		}
		gone := "SELECT count(*) FROM pg_class WHERE relname = 'gone'"
		if e.dialect == "sqlite" {
			gone = "SELECT count(*) FROM sqlite_master WHERE name = 'gone'"
		}
		require.Zero(t, e.count(t, gone), "a transaction left open is rolled back, not committed later")
	})
}

// count runs a count query on a connection of its own (not the target's pool).
func (e env) count(t *testing.T, query string) int {
	t.Helper()
	var n int
	if e.dialect == "postgres" {
		e.pgQuery(t, query, nil, &n)
		return n
	}
	_, path, err := queue.ParseDSN(e.dsn)
	require.NoError(t, err)
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.QueryRowContext(e.ctx, query).Scan(&n))
	return n
}

// Session settings, temporary tables and advisory locks a body leaves behind
// do not reach the next body on the pool.
func TestPostgresSessionStateDoesNotLeak(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testpg.Shared(t).NewDatabase(t))
	_, err := e.target.Run(e.ctx, `SET statement_timeout = '50ms'; CREATE TEMP TABLE tmp (n int); SELECT pg_advisory_lock(42)`, nil)
	require.NoError(t, err)
	for range 3 { // whichever pooled connection comes next
		_, err := e.target.Run(e.ctx, "SELECT pg_sleep(0.2)\nGO\nCREATE TEMP TABLE tmp (n int)", nil)
		require.NoError(t, err, "a setting or temporary table leaked into the next body")
	}
	require.Zero(t, e.count(t, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 42`),
		"an advisory lock leaked past the body")
}

// A body that fails after changing its session is reset all the same: the
// reset travels with the last batch, and a failed body must not skip it.
func TestPostgresFailedBodyIsResetToo(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testpg.Shared(t).NewDatabase(t))
	_, err := e.target.Run(e.ctx, "SET search_path = nowhere\nGO\nCREATE TEMP TABLE tmp (n int); SELECT 1/0", nil)
	require.ErrorContains(t, err, "division by zero")
	require.ErrorContains(t, err, "batch 2")
	for range 3 {
		_, err := e.target.Run(e.ctx, "CREATE TEMP TABLE tmp (n int); CREATE TABLE IF NOT EXISTS public_probe (n int)", nil)
		require.NoError(t, err, "a setting or temporary table of a failed body leaked into the next body")
	}
	require.Equal(t, 1, e.count(t, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename = 'public_probe'`),
		"search_path was left at nowhere")
}

// COPY FROM STDIN has no client to read from: it fails with a message that
// says so, and the connection serves the next body.
func TestPostgresCopyFromStdinFailsClearly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testpg.Shared(t).NewDatabase(t))
	_, err := e.target.Run(e.ctx, "CREATE TABLE c (n int); COPY c FROM STDIN", nil)
	require.ErrorContains(t, err, "COPY FROM STDIN is not available to a task body")
	res, err := e.target.Run(e.ctx, "SELECT 1", nil)
	require.NoError(t, err)
	require.EqualValues(t, 1, res.RowsAffected)
}

// A body's result rows are read and dropped as they arrive: two million rows
// are counted, not held.
func TestPostgresLargeResultIsCountedNotHeld(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testpg.Shared(t).NewDatabase(t))
	res, err := e.target.Run(e.ctx, "SELECT g, repeat('x', 100) FROM generate_series(1, 2000000) g", nil)
	require.NoError(t, err)
	require.EqualValues(t, 2000000, res.RowsAffected)
}

// The pool does not cap how many bodies run at once below what a node's
// workers ask for: twelve half-second sleeps run side by side.
func TestPostgresRunsManyBodiesAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testpg.Shared(t).NewDatabase(t))
	const n = 12
	start := time.Now()
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := e.target.Run(e.ctx, "SELECT pg_sleep(0.5)", nil)
			errs <- err
		}()
	}
	for range n {
		require.NoError(t, <-errs)
	}
	took := time.Since(start)
	t.Logf("%d concurrent 0.5 s bodies took %s", n, took.Round(time.Millisecond))
	require.Less(t, took, 1200*time.Millisecond, "the bodies must not queue for pool connections")
}
