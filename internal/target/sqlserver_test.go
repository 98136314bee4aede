package target

// SQL Server executor tests. The first ones are offline and run everywhere:
// error wording, notices, GO splitting. The rest need a server: set
// READPAST_TEST_MSSQL_DSN to a sqlserver:// DSN. They use only temporary
// tables, so any login works, except that the cancellation tests read
// sys.dm_exec_requests for another session, which needs VIEW SERVER STATE
// (VIEW SERVER PERFORMANCE STATE on SQL Server 2022); they fail saying so
// when the login cannot see the running request.

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	mssql "github.com/microsoft/go-mssqldb"
	"github.com/stretchr/testify/require"
)

const mssqlDSNEnv = "READPAST_TEST_MSSQL_DSN"

func TestFormatServerError(t *testing.T) {
	e := mssql.Error{Number: 208, Class: 16, State: 1, LineNo: 1, Message: "Invalid object name 'x'."}
	require.Equal(t, "Msg 208, Level 16, State 1, Line 1: Invalid object name 'x'.", formatServerError(e))

	e = mssql.Error{Number: 50000, Class: 16, State: 2, LineNo: 7, ProcName: "dbo.load", Message: "boom"}
	require.Equal(t, "Msg 50000, Level 16, State 2, Procedure dbo.load, Line 7: boom", formatServerError(e))
}

func TestDescribeShowsTheFirstServerErrorAndKeepsTheDriverError(t *testing.T) {
	first := mssql.Error{Number: 2627, Class: 14, State: 1, LineNo: 3, Message: "Violation of PRIMARY KEY constraint 'pk'."}
	last := mssql.Error{Number: 50000, Class: 16, State: 1, LineNo: 4, Message: "later"}
	last.All = []mssql.Error{first, last}

	err := describe(last)
	require.Equal(t, "Msg 2627, Level 14, State 1, Line 3: Violation of PRIMARY KEY constraint 'pk'.", err.Error())
	var got mssql.Error
	require.True(t, errors.As(err, &got), "errors.As must still find the mssql.Error")
	require.EqualValues(t, 2627, got.Number)

	plain := errors.New("driver: bad connection")
	require.Same(t, plain, describe(plain))
	require.NoError(t, describe(nil))
}

func TestNoticeLine(t *testing.T) {
	line, ok := noticeLine(mssql.Error{Number: 0, Class: 0, Message: "hello"})
	require.True(t, ok)
	require.Equal(t, "hello", line) // PRINT, and RAISERROR at severity 10 (sent as 0)

	line, ok = noticeLine(mssql.Error{Number: 50000, Class: 5, State: 1, LineNo: 2, Message: "low"})
	require.True(t, ok)
	require.Equal(t, "Msg 50000, Level 5, State 1, Line 2: low", line)

	_, ok = noticeLine(mssql.Error{Number: 5701, Message: "Changed database context to 'db'."})
	require.False(t, ok, "sqlcmd hides 5701, and so does the log")
}

func TestSplitBatchesHonoursGoCounts(t *testing.T) {
	for _, c := range []struct {
		body string
		want []string // batches with surrounding white space trimmed
	}{
		{"SELECT 1", []string{"SELECT 1"}},
		{"PRINT 1\nGO 3\nPRINT 2", []string{"PRINT 1", "PRINT 1", "PRINT 1", "PRINT 2"}},
		{"PRINT 1\nGO 3", []string{"PRINT 1", "PRINT 1", "PRINT 1"}}, // count on the last line, no line break
		{"PRINT 1\r\ngo 2\r\nPRINT 2\r\n", []string{"PRINT 1", "PRINT 1", "PRINT 2"}},
		{"PRINT 1\nGO 0\nPRINT 2", []string{"PRINT 2"}},
		{"GO\n\n  GO  \n", nil},
		{"SELECT 'GO'\nGO\n/* GO */ SELECT 2 -- GO\n", []string{"SELECT 'GO'", "/* GO */ SELECT 2 -- GO"}},
		{"SELECT gone FROM t\nGOTO x\n", []string{"SELECT gone FROM t\nGOTO x"}},
	} {
		var got []string
		for _, b := range splitBatches(c.body) {
			got = append(got, strings.TrimSpace(b))
		}
		require.Equal(t, c.want, got, "splitBatches(%q)", c.body)
	}
	require.Len(t, splitBatches("PRINT 1\nGO 5000\n"), 1000, "batch.Split caps a repeat count at 1000")
}

func TestOpenSQLServerRejectsABadDSN(t *testing.T) {
	_, err := Open(context.Background(), "sqlserver://localhost?port=notaport")
	require.Error(t, err)
	require.Contains(t, err.Error(), "target: parsing the sqlserver dsn")
}

// ---- against a server ----

// newSQLServerTarget opens the target the DSN in mssqlDSNEnv names, or skips.
func newSQLServerTarget(t *testing.T) *sqlServerTarget {
	t.Helper()
	dsn := os.Getenv(mssqlDSNEnv)
	if dsn == "" {
		t.Skip(mssqlDSNEnv + " not set: no SQL Server to run the executor on")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tgt, err := Open(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tgt.Close() })
	return tgt.(*sqlServerTarget)
}

// mssqlMonitor is a connection of its own for reading the DMVs, opened before
// the run it watches so that it cannot have that run's SPID.
func mssqlMonitor(t *testing.T) *sql.Conn {
	t.Helper()
	db, err := sql.Open("sqlserver", os.Getenv(mssqlDSNEnv))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	conn, err := db.Conn(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// requests counts the requests session spid is running.
func requests(t *testing.T, monitor *sql.Conn, spid string) int {
	t.Helper()
	id, err := strconv.Atoi(spid)
	require.NoError(t, err)
	var n int
	require.NoError(t, monitor.QueryRowContext(context.Background(),
		"SELECT COUNT(*) FROM sys.dm_exec_requests WHERE session_id = @spid;", sql.Named("spid", id)).Scan(&n))
	return n
}

// awaitRequest waits until session spid is seen running a request. It fails
// if that does not happen before until: the login then cannot see other
// sessions, and a later "no request running" would prove nothing.
func awaitRequest(t *testing.T, monitor *sql.Conn, spid string, until time.Time) {
	t.Helper()
	for time.Now().Before(until) {
		if requests(t, monitor, spid) > 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("never saw the WAITFOR running in sys.dm_exec_requests: grant the test login VIEW SERVER STATE")
}

func TestSQLServerSessionIDAndMessages(t *testing.T) {
	tgt := newSQLServerTarget(t)
	var reported string
	res, err := tgt.Run(context.Background(),
		"PRINT 'hello';\nRAISERROR('x', 10, 1);\nRAISERROR('%d', 10, 1, @@SPID);\n",
		func(id string) { reported = id })
	require.NoError(t, err)
	require.NotEmpty(t, res.SessionID)
	require.Equal(t, res.SessionID, reported, "onSession gets the session id")
	require.Equal(t, "hello\nx\n"+res.SessionID+"\n", res.Messages, "the body ran on the session reported")
}

func TestSQLServerRowsAffectedAddUpOverGoBatches(t *testing.T) {
	tgt := newSQLServerTarget(t)
	res, err := tgt.Run(context.Background(), `CREATE TABLE #t (id int NOT NULL);
INSERT INTO #t (id) VALUES (1), (2), (3);
GO
UPDATE #t SET id = id + 1;
GO 2
DELETE FROM #t WHERE id > 3;
`, nil)
	require.NoError(t, err)
	// 3 inserted, 3 updated twice, then ids 3, 4, 5: 2 deleted.
	require.EqualValues(t, 3+3+3+2, res.RowsAffected)
}

func TestSQLServerErrorsAreWordedAndStopTheBody(t *testing.T) {
	tgt := newSQLServerTarget(t)
	res, err := tgt.Run(context.Background(),
		"PRINT 'a';\nGO\nSELECT * FROM dbo.readpast_no_such_table;\nGO\nPRINT 'never';\n", nil)
	require.Error(t, err)
	require.Equal(t, "batch 2 of 3: Msg 208, Level 16, State 1, Line 1: Invalid object name 'dbo.readpast_no_such_table'.", err.Error())
	var e mssql.Error
	require.True(t, errors.As(err, &e))
	require.EqualValues(t, 208, e.Number)
	require.Contains(t, res.Messages, "a\n")
	require.Contains(t, res.Messages, "Msg 208, Level 16")
	require.NotContains(t, res.Messages, "never")
}

func TestSQLServerStatementErrorsLetTheBatchGoOn(t *testing.T) {
	tgt := newSQLServerTarget(t)
	res, err := tgt.Run(context.Background(),
		"RAISERROR('first', 16, 1);\nPRINT 'after';\nRAISERROR('second', 16, 1);\n", nil)
	require.EqualError(t, err, "Msg 50000, Level 16, State 1, Line 1: first")
	require.Equal(t, "Msg 50000, Level 16, State 1, Line 1: first\nafter\nMsg 50000, Level 16, State 1, Line 3: second\n", res.Messages)
}

func TestSQLServerMessagesAreCapped(t *testing.T) {
	tgt := newSQLServerTarget(t)
	res, err := tgt.Run(context.Background(), `DECLARE @i int = 0;
WHILE @i < 2000
BEGIN
    PRINT REPLICATE(N'é', 100);
    SET @i += 1;
END;
`, nil)
	require.NoError(t, err)
	require.LessOrEqual(t, len(res.Messages), MaxMessages)
	require.True(t, strings.HasSuffix(res.Messages, truncatedMarker), "ends with the truncation marker")
	require.True(t, utf8.ValidString(res.Messages))
}

func TestSQLServerDeadlineStopsTheStatementOnTheServer(t *testing.T) {
	tgt := newSQLServerTarget(t)
	monitor := mssqlMonitor(t)

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	type outcome struct {
		res     Result
		err     error
		elapsed time.Duration
	}
	spid := make(chan string, 1)
	done := make(chan outcome, 1)
	go func() {
		start := time.Now()
		res, err := tgt.Run(ctx, "WAITFOR DELAY '00:01:00';", func(id string) { spid <- id })
		done <- outcome{res, err, time.Since(start)}
	}()
	id := <-spid
	deadline, _ := ctx.Deadline()
	awaitRequest(t, monitor, id, deadline) // the monitor can see the request while it runs

	got := <-done
	require.ErrorIs(t, got.err, context.DeadlineExceeded)
	require.Less(t, got.elapsed, 5*time.Second, "the run must end soon after its deadline")
	require.Equal(t, id, got.res.SessionID)
	require.Equal(t, 0, requests(t, monitor, id), "the WAITFOR must not be running any more")
}

// TestSQLServerCancelStopsTheRequestBeforeTheConnectionCloses checks the
// attention itself: Run closes a cancelled connection, which would end the
// request anyway, so this drives runBatch on a connection kept open.
func TestSQLServerCancelStopsTheRequestBeforeTheConnectionCloses(t *testing.T) {
	tgt := newSQLServerTarget(t)
	monitor := mssqlMonitor(t)
	conn, err := tgt.db.Conn(context.Background())
	require.NoError(t, err)
	defer discard(conn)
	var id int
	require.NoError(t, conn.QueryRowContext(context.Background(), "SELECT CAST(@@SPID AS int);").Scan(&id))
	spid := strconv.Itoa(id)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := runBatch(ctx, conn, "WAITFOR DELAY '00:01:00';", &messages{})
		done <- err
	}()
	awaitRequest(t, monitor, spid, time.Now().Add(5*time.Second))
	cancelled := time.Now()
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	require.Less(t, time.Since(cancelled), 5*time.Second)

	var sessions int
	require.NoError(t, monitor.QueryRowContext(context.Background(),
		"SELECT COUNT(*) FROM sys.dm_exec_sessions WHERE session_id = @spid;", sql.Named("spid", id)).Scan(&sessions))
	require.Equal(t, 1, sessions, "the session is still open")
	require.Equal(t, 0, requests(t, monitor, spid), "the attention stopped the request")
}

func TestSQLServerOpenTransactionDoesNotPoisonThePool(t *testing.T) {
	tgt := newSQLServerTarget(t)
	tgt.db.SetMaxOpenConns(1) // a connection handed back would be the next one used
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const check = "IF @@TRANCOUNT <> 0 RAISERROR('inherited an open transaction', 16, 1);"

	_, err := tgt.Run(ctx, "BEGIN TRANSACTION;\nSELECT 1;\n", nil)
	require.ErrorContains(t, err, "left a transaction open")
	_, err = tgt.Run(ctx, check, nil)
	require.NoError(t, err)

	// Cancelled inside an open transaction.
	short, cancelShort := context.WithTimeout(ctx, time.Second)
	defer cancelShort()
	_, err = tgt.Run(short, "BEGIN TRANSACTION;\nWAITFOR DELAY '00:01:00';\n", nil)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	_, err = tgt.Run(ctx, check, nil)
	require.NoError(t, err)
}

func TestSQLServerSessionStateDoesNotLeak(t *testing.T) {
	tgt := newSQLServerTarget(t)
	tgt.db.SetMaxOpenConns(1)
	ctx := context.Background()
	first, err := tgt.Run(ctx, "SET XACT_ABORT ON;\nCREATE TABLE #leak (id int);\n", nil)
	require.NoError(t, err)
	second, err := tgt.Run(ctx, `IF (@@OPTIONS & 16384) <> 0 RAISERROR('XACT_ABORT leaked', 16, 1);
IF OBJECT_ID('tempdb..#leak') IS NOT NULL RAISERROR('#leak leaked', 16, 1);
`, nil)
	require.NoError(t, err)
	require.Equal(t, first.SessionID, second.SessionID, "a clean connection goes back to the pool")
}
