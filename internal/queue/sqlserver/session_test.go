package sqlserver_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/queue/sqlserver"
	"readpast/internal/testenv"
)

// tdsEnv is a migrated store on a fresh database of the SQL Server that
// READPAST_TEST_MSSQL_DSN names, whose pool holds one connection, so that the
// session a transactional body ran on is the one the next request gets.
func tdsEnv(t *testing.T) (*testenv.Env, *sqlserver.Store, *sql.DB) {
	t.Helper()
	if os.Getenv(testenv.MSSQLDSNEnv) == "" {
		t.Skip(testenv.MSSQLDSNEnv + " not set: no SQL Server to run on")
	}
	e := testenv.New(t, testenv.SQLServer)
	s := queue.Unwrap(e.Store).(*sqlserver.Store)
	db := sqlserver.PoolOf(s)
	db.SetMaxOpenConns(1)
	return e, s, db
}

// runBody enqueues body as a transactional task of queue q, claims it and runs
// it, returning the body's error and RunTransactional's.
func runBody(t *testing.T, e *testenv.Env, s *sqlserver.Store, q, body string) (bodyErr, err error) {
	t.Helper()
	e.Enqueue(t, queue.NewTask{Queue: q, Body: body, Transactional: true, MaxAttempts: 1})
	got, err := s.Claim(e.Ctx, queue.ClaimParams{Queue: q, Owner: "n/w1", Limit: 1, LeaseDuration: time.Minute})
	require.NoError(t, err)
	require.Len(t, got, 1)
	res, err := s.RunTransactional(e.Ctx, queue.Attempt{Lease: got[0].Lease(), Outcome: queue.OutcomeSucceeded, StartedAt: time.Now()}, body)
	return res.BodyErr, err
}

// isolationLevel is sys.dm_exec_sessions' transaction_isolation_level of the
// session the pool hands out next (2: READ COMMITTED).
func isolationLevel(t *testing.T, ctx context.Context, db *sql.DB) int {
	t.Helper()
	var level int
	require.NoError(t, db.QueryRowContext(ctx, "SELECT transaction_isolation_level FROM sys.dm_exec_sessions WHERE session_id = @@SPID;").Scan(&level))
	return level
}

// TestFailedBodyLeavesNoIsolationLevel: a body that sets an isolation level
// and fails was rolled back and its session pooled with that level, which
// sp_reset_connection does not reset; on SQL Server every claim on that
// session then failed with error 650 (READPAST under READ UNCOMMITTED).
func TestFailedBodyLeavesNoIsolationLevel(t *testing.T) {
	e, s, db := tdsEnv(t)
	// The level is also set after the body ends the task's transaction:
	// Babelfish, whose SET is PostgreSQL's, undoes a level set inside a
	// transaction that rolls back; SQL Server keeps it either way.
	for i, body := range []string{
		"SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED;\nSELECT 1/0;",
		"COMMIT TRAN;\nSET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED;\nSELECT 1/0;",
	} {
		bodyErr, err := runBody(t, e, s, "iso", body)
		require.NoError(t, err)
		require.Error(t, bodyErr, "the body divides by zero")
		require.Equal(t, 2, isolationLevel(t, e.Ctx, db), "body %d: the pooled session must be back at READ COMMITTED after a failed body", i+1)
	}

	e.Enqueue(t, queue.NewTask{Queue: "iso", Body: "SELECT 1"})
	got, err := s.Claim(e.Ctx, queue.ClaimParams{Queue: "iso", Owner: "n/w1", Limit: 1, LeaseDuration: time.Minute})
	require.NoError(t, err, "a claim on the session the failed body used")
	require.Len(t, got, 1)
}

// TestBareNameBatchRuns: the last batch of a body without a trailing line
// break, RETURN here, went to the server as an RPC call of a procedure named
// RETURN (go-mssqldb's isProc), which the server refused.
func TestBareNameBatchRuns(t *testing.T) {
	e, s, _ := tdsEnv(t)
	bodyErr, err := runBody(t, e, s, "ret", "SELECT 1;\nGO\nRETURN")
	require.NoError(t, err)
	require.NoError(t, bodyErr, "a batch of one word is T-SQL, not a procedure call")
}

// TestGlobalTempTableEndsWithItsSession: a transactional body that created a
// ##global temporary table went back to the pool with it (sp_reset_connection
// drops #local tables only), so the table outlived the task.
func TestGlobalTempTableEndsWithItsSession(t *testing.T) {
	e, s, db := tdsEnv(t)
	e.SkipOnBabelfish(t, "no ##global temporary tables ('GLOBAL TEMPORARY TABLE' is not currently supported)")
	bodyErr, err := runBody(t, e, s, "global", "CREATE TABLE ##readpast_global_probe (id int);")
	require.NoError(t, err)
	require.NoError(t, bodyErr)
	var id sql.NullInt64
	require.NoError(t, db.QueryRowContext(e.Ctx, "SELECT OBJECT_ID(N'tempdb..##readpast_global_probe');").Scan(&id))
	require.False(t, id.Valid, "the ##global table a body created must end with the task's session")
}

// TestBodyLeavesNoIdentityInsertOn: a body that left IDENTITY_INSERT on for a
// store table, succeeding or failing, handed its session to the store with
// it, and the next finish on that session failed to log its attempt (545: an
// explicit value is needed for the identity column).
func TestBodyLeavesNoIdentityInsertOn(t *testing.T) {
	e, s, _ := tdsEnv(t)
	for i, body := range []string{
		"SET IDENTITY_INSERT dbo.readpast_attempts ON;",
		"SET IDENTITY_INSERT dbo.readpast_attempts ON;\nSELECT 1/0;",
	} {
		q := fmt.Sprintf("ident%d", i)
		_, err := runBody(t, e, s, q, body)
		require.NoError(t, err)
		e.Enqueue(t, queue.NewTask{Queue: q, Body: "SELECT 1"})
		got, err := s.Claim(e.Ctx, queue.ClaimParams{Queue: q, Owner: "n/w1", Limit: 1, LeaseDuration: time.Minute})
		require.NoError(t, err)
		require.Len(t, got, 1)
		now := time.Now()
		fin, err := s.Finish(e.Ctx, []queue.Attempt{{Lease: got[0].Lease(), Outcome: queue.OutcomeSucceeded, StartedAt: now, FinishedAt: now}})
		require.NoError(t, err, "body %d", i+1)
		require.NoError(t, fin[0].Err, "body %d: the finish after it logs its attempt", i+1)
	}
}
