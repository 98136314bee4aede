package target_test

// The target executors' shared suite: every behaviour of Target.Run on every
// dialect that can run here (SQL Server when READPAST_TEST_MSSQL_DSN is set),
// each dialect's own SQL chosen per test. A behaviour a dialect cannot have
// (SQLite has no server messages or session locks) is skipped with the reason.

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"readpast/internal/sqlrun"
	"readpast/internal/target"
	"readpast/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// each runs fn once per dialect on a fresh database, with its target.
func each(t *testing.T, fn func(t *testing.T, e *testenv.Env, tgt target.Target)) {
	testenv.ForEachDialectDSN(t, func(t *testing.T, e *testenv.Env) { fn(t, e, e.Target(t)) })
}

// run runs body and fails the test on error.
func run(t *testing.T, e *testenv.Env, tgt target.Target, body string) target.Result {
	t.Helper()
	res, err := tgt.Run(e.Ctx, body, nil)
	require.NoError(t, err, "running %q", body)
	return res
}

// sessionIDExpr is the dialect's own session id, as the target reports it.
func sessionIDExpr(d testenv.Dialect) string {
	if d == testenv.SQLServer {
		return "@@SPID"
	}
	return "pg_backend_pid()"
}

// The session id is reported before the body runs and is the one the body
// runs on.
func TestSessionIDIsReportedBeforeTheBody(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *testenv.Env, tgt target.Target) {
		early, called := "", false
		body := "CREATE TABLE sid (v int)"
		if e.Dialect != testenv.SQLite {
			body += "\nGO\nINSERT INTO sid SELECT " + sessionIDExpr(e.Dialect)
		}
		res, err := tgt.Run(e.Ctx, body, func(id string) { early, called = id, true })
		require.NoError(t, err)
		require.True(t, called, "onSession is called")
		require.Equal(t, res.SessionID, early, "onSession gets the id the result reports")
		if e.Dialect == testenv.SQLite {
			require.Empty(t, res.SessionID, "SQLite has no server session")
			return
		}
		require.Equal(t, res.SessionID, strconv.FormatInt(e.QueryInt(t, "SELECT v FROM sid"), 10), "the body ran on the session reported")
	})
}

// notice is a body statement that sends msg as a server message, and the
// line it becomes in Result.Messages.
func notice(d testenv.Dialect, msg string) (stmt, line string) {
	if d == testenv.SQLServer {
		return "PRINT '" + msg + "';", msg
	}
	return "DO $$ BEGIN RAISE NOTICE '" + msg + "'; END $$;", "NOTICE: " + msg
}

// Server messages are kept in order, also those of a failing body up to its
// error, and do not leak into the next run.
func TestMessagesKeepTheirOrder(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *testenv.Env, tgt target.Target) {
		if e.Dialect == testenv.SQLite {
			t.Skip("SQLite sends no server messages")
		}
		a, la := notice(e.Dialect, "hello")
		b, lb := notice(e.Dialect, "again")
		res := run(t, e, tgt, a+"\nGO\n"+b)
		require.Equal(t, la+"\n"+lb+"\n", res.Messages)
		require.Empty(t, run(t, e, tgt, "SELECT 1").Messages, "messages of one run do not leak into the next")

		fail := "RAISERROR('boom', 16, 1);"
		if e.Dialect == testenv.Postgres {
			fail = "DO $$ BEGIN RAISE EXCEPTION 'boom'; END $$;"
		}
		res, err := tgt.Run(e.Ctx, a+"\n"+fail, nil)
		require.ErrorContains(t, err, "boom")
		require.True(t, strings.HasPrefix(res.Messages, la+"\n"), "the messages before the error are kept: %q", res.Messages)
	})
}

// More than 64 KiB of messages are cut at MaxMessages, ending with the marker,
// never inside a character.
func TestMessagesAreCapped(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *testenv.Env, tgt target.Target) {
		body := `DO $$ BEGIN
	FOR i IN 1..3000 LOOP RAISE NOTICE '% %', lpad(i::text, 5, '0'), repeat('é', 50); END LOOP;
END $$`
		switch e.Dialect {
		case testenv.SQLite:
			t.Skip("SQLite sends no server messages")
		case testenv.SQLServer:
			body = `DECLARE @i int = 1;
WHILE @i <= 3000
BEGIN
    PRINT RIGHT('0000' + CAST(@i AS varchar(5)), 5) + N' ' + REPLICATE(N'é', 50);
    SET @i += 1;
END;`
		}
		res := run(t, e, tgt, body)
		require.LessOrEqual(t, len(res.Messages), sqlrun.MaxMessages)
		require.Greater(t, len(res.Messages), sqlrun.MaxMessages-200, "the cap is filled, not left half empty")
		require.True(t, strings.HasSuffix(res.Messages, "[… messages truncated at 64 KiB]"), "the cut is marked")
		require.Contains(t, res.Messages[:40], "00001 é", "the first messages are kept")
		require.True(t, utf8.ValidString(res.Messages), "no character is split by the cut")
	})
}

// Rows affected add up over the statements of a batch and over batches split
// on GO lines (a batch repeated by "GO n" counts n times); a failing batch
// stops the body and keeps the count so far.
func TestRowsAffectedAddUpOverBatches(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *testenv.Env, tgt target.Target) {
		res := run(t, e, tgt, strings.Join([]string{
			"CREATE TABLE r (n int)",
			"go",
			"INSERT INTO r VALUES (1), (2), (3); INSERT INTO r VALUES (4)",
			"  GO  ",
			"UPDATE r SET n = n + 10 WHERE n > 1",
			"GO 2",
			"DELETE FROM r WHERE n = 1",
		}, "\n"))
		require.Equal(t, int64(3+1+3+3+1), res.RowsAffected)

		res, err := tgt.Run(e.Ctx, "UPDATE r SET n = n\nGO\nSELECT * FROM no_such_table\nGO\nDELETE FROM r", nil)
		require.ErrorContains(t, err, "batch 2 of 3")
		require.Equal(t, int64(3), res.RowsAffected, "the first batch's rows count; the third batch never ran")
		require.Equal(t, int64(3), run(t, e, tgt, "UPDATE r SET n = n").RowsAffected)
	})
}

// The first error is worded as the dialect's own tools word it.
func TestErrorsAreWordedLikeTheServersOwnTools(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *testenv.Env, tgt target.Target) {
		_, err := tgt.Run(e.Ctx, "SELECT 1\nGO\nSELECT * FROM readpast_no_such_table", nil)
		require.Error(t, err)
		switch e.Dialect {
		case testenv.SQLServer:
			e.SkipOnBabelfish(t, "other error numbers and texts than SQL Server's")
			require.Equal(t, "batch 2 of 2: Msg 208, Level 16, State 1, Line 1: Invalid object name 'readpast_no_such_table'.", err.Error())
		case testenv.Postgres:
			require.Contains(t, err.Error(), `relation "readpast_no_such_table" does not exist`)
		default:
			require.Contains(t, err.Error(), "no such table: readpast_no_such_table")
		}
	})
}

// A statement still running when the context's deadline passes is stopped on
// the server: Run returns within seconds, the server runs it no more, and the
// target serves the next body.
func TestDeadlineStopsTheStatementOnTheServer(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *testenv.Env, tgt target.Target) {
		if e.Dialect == testenv.SQLServer {
			e.SkipOnBabelfish(t, testenv.BabelfishAttention)
		}
		ctx, cancel := context.WithTimeout(e.Ctx, time.Second)
		defer cancel()
		start := time.Now()
		res, err := tgt.Run(ctx, testenv.SleepBody(t, e.Dialect, time.Minute), nil)
		took := time.Since(start)
		t.Logf("a 60 s sleep with a 1 s deadline returned after %s: %v", took.Round(time.Millisecond), err)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Less(t, took, 5*time.Second, "Run must return within seconds of the deadline")
		switch e.Dialect {
		case testenv.Postgres:
			require.Zero(t, e.QueryInt(t, fmt.Sprintf(`SELECT count(*) FROM pg_stat_activity
				WHERE pid = %s AND state = 'active'`, res.SessionID)), "the server must not still run the statement")
		case testenv.SQLServer:
			require.Zero(t, e.QueryInt(t, "SELECT COUNT(*) FROM sys.dm_exec_requests WHERE session_id = "+res.SessionID),
				"the WAITFOR must not be running any more (the test login needs VIEW SERVER STATE)")
		}
		run(t, e, tgt, "SELECT 1") // the target serves the next body
		if e.Dialect == testenv.SQLite {
			// A busy statement, not a sleep, is stopped between its steps.
			ctx, cancel := context.WithTimeout(e.Ctx, time.Second)
			defer cancel()
			start := time.Now()
			_, err := tgt.Run(ctx, testenv.CountingSleepBody(t, time.Minute), nil)
			require.ErrorIs(t, err, context.DeadlineExceeded)
			require.Less(t, time.Since(start), 5*time.Second)
		}
	})
}

// SQLite connections get sleep(seconds), so a task can take time on the
// embedded default as pg_sleep or WAITFOR DELAY make it elsewhere.
func TestSQLiteSleep(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *testenv.Env, tgt target.Target) {
		if e.Dialect != testenv.SQLite {
			t.Skip("sleep() is what ReadPast gives SQLite connections")
		}
		start := time.Now()
		run(t, e, tgt, "SELECT sleep(0.3)")
		require.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
		for _, bad := range []string{"SELECT sleep(-1)", "SELECT sleep('x')", "SELECT sleep(100000)"} {
			_, err := tgt.Run(e.Ctx, bad, nil)
			require.ErrorContains(t, err, "sleep(seconds) takes a number of seconds", "%q", bad)
		}
	})
}

// A body that leaves a transaction open fails (its work is rolled back, so it
// did not succeed) and does not hand the transaction to the next body.
func TestOpenTransactionFailsAndDoesNotPoisonThePool(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *testenv.Env, tgt target.Target) {
		begin := "BEGIN"
		if e.Dialect == testenv.SQLServer {
			begin = "BEGIN TRANSACTION"
		}
		for i, body := range []string{
			begin + "; SELECT 1",
			begin + "\nGO\nCREATE TABLE gone (n int)",
		} {
			_, err := tgt.Run(e.Ctx, body, nil)
			require.ErrorContains(t, err, "transaction open", "%q must not count as a success", body)
			// If the next run inherited the transaction, its write would never commit.
			table := fmt.Sprintf("after_%d", i)
			run(t, e, tgt, fmt.Sprintf("CREATE TABLE %s (n int); INSERT INTO %[1]s VALUES (1)", table))
			require.Equal(t, int64(1), e.QueryInt(t, "SELECT count(*) FROM "+table), "after %q the next body's write commits", body)
		}
		_, err := tgt.Run(e.Ctx, "SELECT count(*) FROM gone", nil)
		require.Error(t, err, "a transaction left open is rolled back, not committed later")
	})
}

// Settings and temporary tables a body leaves behind, succeeding or failing,
// do not reach the next body, on whichever connection it runs.
func TestSessionStateDoesNotLeak(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *testenv.Env, tgt target.Target) {
		var leave, check, failing string
		switch e.Dialect {
		case testenv.Postgres:
			leave = "SET statement_timeout = '50ms'; SET search_path = nowhere; CREATE TEMP TABLE tmp (n int)"
			failing = "SET search_path = nowhere\nGO\nCREATE TEMP TABLE tmp (n int); SELECT 1/0"
			check = "SELECT pg_sleep(0.2)\nGO\nCREATE TEMP TABLE tmp (n int); CREATE TABLE IF NOT EXISTS public_probe (n int)"
		case testenv.SQLServer:
			isolation := "SERIALIZABLE"
			if testenv.IsBabelfish(t, e.DSN) {
				isolation = "READ UNCOMMITTED" // testenv.BabelfishIsolation
			}
			leave = "SET XACT_ABORT ON; SET LOCK_TIMEOUT 1; SET TRANSACTION ISOLATION LEVEL " + isolation + ";\nCREATE TABLE #tmp (n int);"
			failing = "SET XACT_ABORT ON;\nCREATE TABLE #tmp (n int);\nRAISERROR('boom', 16, 1);"
			check = `IF (@@OPTIONS & 16384) <> 0 RAISERROR('XACT_ABORT leaked', 16, 1);
IF @@LOCK_TIMEOUT <> -1 RAISERROR('LOCK_TIMEOUT leaked', 16, 1);
IF (SELECT transaction_isolation_level FROM sys.dm_exec_sessions WHERE session_id = @@SPID) <> 2
    RAISERROR('the isolation level leaked', 16, 1);
CREATE TABLE #tmp (n int);`
		default:
			leave = "CREATE TEMP TABLE tmp (n int); PRAGMA query_only = 1"
			failing = "CREATE TEMP TABLE tmp (n int)\nGO\nSELECT * FROM nowhere"
			check = "CREATE TEMP TABLE tmp (n int); CREATE TABLE IF NOT EXISTS probe (n int)"
		}
		run(t, e, tgt, leave)
		for range 3 { // whichever pooled connection comes next
			run(t, e, tgt, check)
		}
		_, err := tgt.Run(e.Ctx, failing, nil)
		require.Error(t, err)
		for range 3 {
			run(t, e, tgt, check)
		}
	})
}

// A session lock a body takes and does not release (seed 001's pattern:
// sp_getapplock with @LockOwner = 'Session', an advisory lock) is released
// when the body ends, failing or not, not when its pooled session is next
// used: the next task gets the lock at once, on any connection.
func TestSessionLockIsReleasedWhenTheBodyEnds(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *testenv.Env, tgt target.Target) {
		var take, try string
		switch e.Dialect {
		case testenv.SQLite:
			t.Skip("SQLite has no session locks")
		case testenv.Postgres:
			take = "SELECT pg_advisory_lock(42)"
			try = "INSERT INTO got SELECT CASE WHEN pg_try_advisory_lock(42) THEN 1 ELSE 0 END; SELECT pg_advisory_unlock_all()"
		case testenv.SQLServer:
			take = "EXEC sp_getapplock @Resource = N'readpast-probe', @LockMode = 'Exclusive', @LockOwner = 'Session';"
			try = `DECLARE @r int;
EXEC @r = sp_getapplock @Resource = N'readpast-probe', @LockMode = 'Exclusive', @LockOwner = 'Session', @LockTimeout = 0;
INSERT INTO got VALUES (CASE WHEN @r >= 0 THEN 1 ELSE 0 END);
IF @r >= 0 EXEC sp_releaseapplock @Resource = N'readpast-probe', @LockOwner = 'Session';`
		}
		run(t, e, tgt, "CREATE TABLE got (v int)")
		fail := take + "\nGO\nSELECT * FROM readpast_no_such_table"
		for i, body := range []string{fail, take} {
			_, err := tgt.Run(e.Ctx, body, nil)
			require.Equal(t, i == 0, err != nil, "%q", body)
			// On a connection of its own: the lock must be free now, not
			// when the pool hands the first session out again.
			other, err := target.Open(e.Ctx, e.DSN)
			require.NoError(t, err)
			run(t, e, other, try)
			require.NoError(t, other.Close())
			require.Equal(t, int64(i+1), e.QueryInt(t, "SELECT count(*) FROM got WHERE v = 1"),
				"after %q the next task gets the lock at once", body)
		}
	})
}

// Bodies run side by side: the pool does not cap them below what a node's
// workers ask for.
func TestManyBodiesRunAtOnce(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *testenv.Env, tgt target.Target) {
		if e.Dialect == testenv.SQLite {
			t.Skip("SQLite's sleep is a counting loop: twelve at once measure the CPU, not the pool")
		}
		e.SkipOnBabelfish(t, "no WAITFOR")
		const n = 12
		start := time.Now()
		errs := make(chan error, n)
		for range n {
			go func() {
				_, err := tgt.Run(e.Ctx, testenv.SleepBody(t, e.Dialect, 500*time.Millisecond), nil)
				errs <- err
			}()
		}
		for range n {
			require.NoError(t, <-errs)
		}
		took := time.Since(start)
		t.Logf("%d concurrent 0.5 s bodies took %s", n, took.Round(time.Millisecond))
		require.Less(t, took, 2*time.Second, "the bodies must not queue for connections")
	})
}

// A body's result rows are read and dropped as they arrive: they are counted,
// not held.
func TestLargeResultIsCountedNotHeld(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *testenv.Env, tgt target.Target) {
		const rows = 500_000
		body := fmt.Sprintf("SELECT g, repeat('x', 100) FROM generate_series(1, %d) g", rows)
		switch e.Dialect {
		case testenv.SQLite:
			body = fmt.Sprintf("WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < %d) SELECT n, printf('%%100s', 'x') FROM g", rows)
		case testenv.SQLServer:
			body = fmt.Sprintf(`WITH d(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM d WHERE n < 9)
SELECT TOP (%d) REPLICATE('x', 100) FROM d a, d b, d c, d e, d f, d g`, rows)
		}
		res := run(t, e, tgt, body)
		if e.Dialect != testenv.SQLite { // SQLite counts rows written only
			require.EqualValues(t, rows, res.RowsAffected)
		}
	})
}

// A session the server ends while the body runs ends the run at once with an
// error, instead of leaving it waiting for a context that may never end.
func TestKilledSessionEndsTheRun(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *testenv.Env, tgt target.Target) {
		var kill string
		switch e.Dialect {
		case testenv.SQLite:
			t.Skip("SQLite has no server session to end")
		case testenv.Postgres:
			kill = "SELECT count(pg_terminate_backend(%s))"
		case testenv.SQLServer:
			e.SkipOnBabelfish(t, "no WAITFOR")
			kill = "KILL %s"
		}
		spid := make(chan string, 1)
		done := make(chan error, 1)
		go func() {
			_, err := tgt.Run(context.WithoutCancel(e.Ctx), testenv.SleepBody(t, e.Dialect, time.Minute), func(id string) { spid <- id })
			done <- err
		}()
		id := <-spid
		time.Sleep(300 * time.Millisecond) // the sleep is under way
		e.Exec(t, fmt.Sprintf(kill, id))
		select {
		case err := <-done:
			require.Error(t, err, "a killed session's body did not succeed")
		case <-time.After(10 * time.Second):
			t.Fatal("the run still waits 10 s after its session was killed")
		}
		run(t, e, tgt, "SELECT 1") // the target serves the next body
	})
}

// COPY FROM STDIN has no client to read from: it fails with a message that
// says so, and the connection serves the next body.
func TestCopyFromStdinFailsClearly(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *testenv.Env, tgt target.Target) {
		if e.Dialect != testenv.Postgres {
			t.Skip("COPY FROM STDIN is PostgreSQL's")
		}
		_, err := tgt.Run(e.Ctx, "CREATE TABLE c (n int); COPY c FROM STDIN", nil)
		require.ErrorContains(t, err, "COPY FROM STDIN is not available to a task body")
		run(t, e, tgt, "SELECT 1")
	})
}

// A DSN the driver cannot read is refused with the part that could not be read.
func TestOpenRejectsABadDSN(t *testing.T) {
	t.Parallel()
	_, err := target.Open(context.Background(), "sqlserver://localhost?port=notaport")
	require.ErrorContains(t, err, "target: parsing the sqlserver dsn")
	_, err = target.Open(context.Background(), "mysql://localhost/db")
	require.ErrorContains(t, err, `dsn scheme "mysql" is not supported`)
}
