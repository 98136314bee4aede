package target

// The SQL Server executor, on github.com/microsoft/go-mssqldb through
// database/sql. It was written against the driver's source (v1.11.2) and
// documentation; no SQL Server runs where it was written, so sqlserver_test.go
// runs it against a server only when READPAST_TEST_MSSQL_DSN is set.
//
// # How one Run goes
//
//  1. Take one *sql.Conn from the pool for the whole body. database/sql calls
//     the driver's ResetSession on a pooled connection, so the first request
//     carries TDS's RESETCONNECTION flag: SET options, temporary tables and the
//     database a previous body switched to do not carry over.
//  2. SELECT @@SPID: the session id, reported before the body runs.
//  3. Split the body on GO lines with go-mssqldb's batch.Split (splitBatches).
//  4. Send each batch as a plain SQL batch (no parameters, so CREATE PROCEDURE
//     and friends work) with QueryContext and a *sqlexp.ReturnMessage
//     argument (runBatch). The server's messages arrive in order on it: PRINT
//     and RAISERROR of severity 10 or less as sqlexp.MsgNotice, errors of
//     severity 11 or more as sqlexp.MsgError, row counts as
//     sqlexp.MsgRowsAffected. Result sets are skipped.
//  5. Stop after the first batch that raised an error.
//  6. Hand the connection back only if it is clean (release).
//
// # Cancellation
//
// When ctx ends, go-mssqldb sends a TDS attention packet on the connection and
// waits up to 5 s (cancelDrainTimeout in its token.go) for the server to
// acknowledge it with a DONE token flagged DONE_ATTN (MS-TDS 2.2.1.7; the
// server acknowledges even when the request had already finished, 3.3.5.9). The server stops the
// request at its next attention check: WAITFOR, a lock wait and a running
// query all stop. This happens in the driver's tokenProcessor.nextToken, which
// selects on the query's context while it waits for the next token; runBatch
// always waits there (in Rows.NextResultSet), and database/sql's Rows, which
// watches ctx and closes itself, ends up there too (Rowsq.Close). An
// attention does not roll back an open transaction, and a connection whose
// cancel was not acknowledged is in an unknown state, so a cancelled run never
// hands its connection back: release closes it, and closing it ends the
// session on the server, which rolls back whatever the body left open.

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/golang-sql/sqlexp"
	mssql "github.com/microsoft/go-mssqldb"
	"github.com/microsoft/go-mssqldb/batch"
)

// Pool settings. Each running task holds one connection for its whole run, so
// the node's worker count bounds the open connections; a cap here would only
// make a task wait for a connection while its timeout runs. Keeping idle ones
// spares the next task a login (TLS and authentication).
const (
	sqlServerMaxIdle     = 16
	sqlServerMaxIdleTime = 5 * time.Minute // firewalls silently cut idle connections
	sqlServerMaxLifetime = time.Hour       // pick up a failover or DNS change
	// cleanupTimeout bounds the @@TRANCOUNT check and rollback after a body.
	cleanupTimeout = 10 * time.Second
)

// Informational messages sqlcmd does not show either: "Changed database
// context to ..." (after USE) and "Changed language setting to ...".
var quietMessages = map[int32]bool{5701: true, 5703: true}

type sqlServerTarget struct{ db *sql.DB }

// openSQLServer connects to the SQL Server a sqlserver:// DSN names (any form
// go-mssqldb accepts) and checks that it answers.
func openSQLServer(ctx context.Context, dsn string) (*sqlServerTarget, error) {
	connector, err := mssql.NewConnector(dsn)
	if err != nil {
		return nil, fmt.Errorf("target: parsing the sqlserver dsn: %w", err)
	}
	db := sql.OpenDB(connector)
	db.SetMaxIdleConns(sqlServerMaxIdle)
	db.SetConnMaxIdleTime(sqlServerMaxIdleTime)
	db.SetConnMaxLifetime(sqlServerMaxLifetime)
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("target: connecting to sqlserver: %w", describe(err))
	}
	return &sqlServerTarget{db: db}, nil
}

func (t *sqlServerTarget) Dialect() string { return "sqlserver" }
func (t *sqlServerTarget) Close() error    { return t.db.Close() }

// Run implements Target. RowsAffected sums the counts the server reports, as
// sqlcmd's "(n rows affected)" lines do: rows written and rows a SELECT
// returned, in every batch (a batch repeated by "GO n" counts n times).
// Messages holds PRINT and RAISERROR output, and the errors, in the order the
// server sent them. The error is the first the server raised, as
// "Msg 208, Level 16, State 1, Line 1: Invalid object name 'x'.", prefixed
// with "batch i of n: " when the body has several batches.
//
// Within a batch SQL Server decides what an error stops: many errors end only
// their statement and the batch goes on (use SET XACT_ABORT ON or THROW to end
// it). Run does not start the next batch after a batch that raised an error.
//
// A body that leaves a transaction open fails: the transaction is rolled back
// and the connection closed, so nothing it did is kept and no later task
// inherits it.
func (t *sqlServerTarget) Run(ctx context.Context, body string, onSession func(string)) (res Result, err error) {
	conn, err := t.db.Conn(ctx)
	if err != nil {
		return res, fmt.Errorf("connecting to the target: %w", describe(err))
	}
	msgs := &messages{}
	defer func() {
		res.Messages = msgs.String()
		if cleanErr := release(ctx, conn); err == nil {
			err = cleanErr
		}
	}()

	var spid int64
	if err := conn.QueryRowContext(ctx, "SELECT CAST(@@SPID AS int);").Scan(&spid); err != nil {
		return res, fmt.Errorf("reading the session id: %w", describe(err))
	}
	res.SessionID = strconv.FormatInt(spid, 10)
	if onSession != nil {
		onSession(res.SessionID)
	}

	batches := splitBatches(body)
	for i, text := range batches {
		n, batchErr := runBatch(ctx, conn, text, msgs)
		res.RowsAffected += n
		if batchErr != nil {
			if len(batches) > 1 {
				batchErr = fmt.Errorf("batch %d of %d: %w", i+1, len(batches), batchErr)
			}
			return res, batchErr
		}
	}
	return res, nil
}

// runBatch sends one batch and reads all it returns. It returns the rows
// affected and the first error the server raised, else the error that ended
// the read (ctx, a broken connection).
//
// The batch goes with a *sqlexp.ReturnMessage argument, so go-mssqldb queues
// every server message, row count and error in order on it. The driver's
// example reads that queue in one loop and calls NextResultSet for each
// MsgNextResultSet; this splits the two: a goroutine (messageReader) takes the
// messages while this one walks the token stream with NextResultSet, which
// skips rows. The reason is in the driver's reader (processSingleResponse):
// when the connection breaks while it waits for the server's reply, it hands
// the error to the token stream and ends without queuing any message, so a loop
// waiting in ReturnMessage.Message would wait until ctx ends, forever for a
// task without a timeout. NextResultSet waits in the driver's nextToken
// instead, which returns that error, and sends the attention when ctx ends.
// The message queue holds 15 entries, so it must be read while the stream is
// walked, hence the goroutine.
func runBatch(ctx context.Context, conn *sql.Conn, text string, msgs *messages) (affected int64, err error) {
	retmsg := &sqlexp.ReturnMessage{}
	rows, err := conn.QueryContext(ctx, text, retmsg)
	if err != nil {
		return 0, describe(err)
	}
	reader := readMessages(retmsg, msgs)
	for rows.NextResultSet() {
		// Each call moves to the next result set or statement end; false at
		// the end of the batch, on a broken connection, or when ctx ends.
	}
	streamErr := rows.Err()
	_ = rows.Close()
	affected, first := reader.stop()
	switch {
	case first != nil:
		return affected, first
	case ctx.Err() != nil:
		return affected, context.Cause(ctx)
	case streamErr != nil:
		return affected, describe(streamErr)
	}
	return affected, nil
}

// drainQuiet is how long the message reader waits on an empty queue, once the
// token stream has ended, before it decides it has every message.
const drainQuiet = 2 * time.Millisecond

// messageReader takes one batch's messages off go-mssqldb's queue: notices and
// errors into the log, row counts into affected, the first error kept.
type messageReader struct {
	stopWaiting context.CancelFunc
	done        chan struct{}
	affected    int64
	first       error
}

func readMessages(retmsg *sqlexp.ReturnMessage, msgs *messages) *messageReader {
	wait, cancel := context.WithCancel(context.Background())
	r := &messageReader{stopWaiting: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for wait.Err() == nil {
			r.handle(retmsg.Message(wait), msgs)
		}
		// The token stream has ended. The driver queues a statement's messages
		// before it passes on the DONE token that ends it, so what is left is
		// in the queue now: take it until the queue stays empty. (Message
		// reports an expired context as MsgNextResultSet, which is ignored.)
		for {
			quiet, cancel := context.WithTimeout(context.Background(), drainQuiet)
			m := retmsg.Message(quiet)
			empty := quiet.Err() != nil
			cancel()
			if _, nothing := m.(sqlexp.MsgNextResultSet); nothing && empty {
				return
			}
			r.handle(m, msgs)
		}
	}()
	return r
}

// handle takes one message. MsgNext and MsgNextResultSet need nothing: the
// token stream is walked by runBatch.
func (r *messageReader) handle(m sqlexp.RawMessage, msgs *messages) {
	switch m := m.(type) {
	case sqlexp.MsgNotice:
		if line, ok := noticeLine(m.Message); ok {
			msgs.add(line)
		}
	case sqlexp.MsgError:
		e := describe(m.Error)
		msgs.add(e.Error())
		if r.first == nil {
			r.first = e
		}
	case sqlexp.MsgRowsAffected:
		r.affected += m.Count
	}
}

// stop ends the reader once runBatch has walked the whole token stream, and
// returns what it gathered.
func (r *messageReader) stop() (affected int64, first error) {
	r.stopWaiting()
	<-r.done
	return r.affected, r.first
}

// release hands conn back to the pool when it is clean and closes it
// otherwise. A connection is clean when the run was not cancelled, it still
// answers, and the body left no transaction open. It returns an error when the
// connection did not answer or a transaction was left open (rolled back here);
// Run reports it only when the body itself did not fail.
func release(ctx context.Context, conn *sql.Conn) error {
	if ctx.Err() != nil {
		// Cancelled mid-statement: the attention did not roll anything back,
		// and if the server never acknowledged it the stream is unusable.
		discard(conn)
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, cleanupTimeout)
	defer cancel()
	var open int
	if err := conn.QueryRowContext(cctx, "SELECT @@TRANCOUNT;").Scan(&open); err != nil {
		// The connection broke. After a failed batch (a severity 20+ error
		// ends the session) the body's error says why; after a batch that
		// seemed to succeed it is how a broken connection shows, since the
		// driver's Rows does not always report one.
		discard(conn)
		return fmt.Errorf("the connection failed after the body, so its outcome is unknown: %w", describe(err))
	}
	if open == 0 {
		_ = conn.Close() // back to the pool
		return nil
	}
	// Closing the connection would also end the transaction (the server rolls
	// back when the session ends); rolling back first releases its locks now.
	_, _ = conn.ExecContext(cctx, "IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;")
	discard(conn)
	return fmt.Errorf("the body left a transaction open (@@TRANCOUNT %d) and it was rolled back: end every BEGIN TRANSACTION with COMMIT or ROLLBACK", open)
}

// discard closes conn's driver connection instead of pooling it: database/sql
// closes a connection for which Raw's function returns driver.ErrBadConn.
func discard(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	_ = conn.Close() // sql.ErrConnDone: Raw has released it already
}

// splitBatches splits a body on GO lines as sqlcmd does, with go-mssqldb's
// batch.Split: the separator is GO alone on a line, any case, outside comments
// and strings; "GO n" runs the batch before it n times (batch.Split repeats its
// text, at most 1000 times; "GO 0" drops it). Batches of only white space are
// dropped.
//
// batch.Split ignores the count of a "GO n" on the last line when no line
// break follows it, so one is added. Its other quirks stay: a "GO" right after
// a string literal or a block comment on the same line also separates
// ('PRINT 'a' GO'), and "GO n -- comment" is not a separator (sqlcmd takes
// both the other way). internal/queue/sqlserver splits transactional bodies
// the same way.
func splitBatches(body string) []string {
	if !strings.HasSuffix(body, "\n") {
		body += "\n"
	}
	var out []string
	for _, b := range batch.Split(body, "GO") {
		if strings.TrimSpace(b) != "" {
			out = append(out, b)
		}
	}
	return out
}

// serverError is an error SQL Server raised, worded as sqlcmd prints it.
// errors.As finds the driver's mssql.Error behind it.
type serverError struct{ err mssql.Error }

func (e serverError) Error() string { return formatServerError(e.err) }
func (e serverError) Unwrap() error { return e.err }

// formatServerError renders one server message as
// "Msg 208, Level 16, State 1, Line 1: Invalid object name 'x'." (with
// ", Procedure p" before the line when it was raised in a module).
func formatServerError(e mssql.Error) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Msg %d, Level %d, State %d", e.Number, e.Class, e.State)
	if e.ProcName != "" {
		fmt.Fprintf(&b, ", Procedure %s", e.ProcName)
	}
	fmt.Fprintf(&b, ", Line %d: %s", e.LineNo, e.Message)
	return b.String()
}

// describe rewords an error that carries an mssql.Error as a serverError; any
// other error is returned as it is. When the driver gathered several errors
// from one request it describes the last in the fields and lists all in All;
// the first is shown, as it is usually the cause.
func describe(err error) error {
	var e mssql.Error
	if err == nil || !errors.As(err, &e) {
		return err
	}
	if len(e.All) > 0 {
		e = e.All[0]
	}
	return serverError{err: e}
}

// noticeLine is how an informational message goes into the log: PRINT output
// and RAISERROR at severity 10 (which the server reports as 0) as their text,
// severities 1-9 in the Msg form, and the two messages sqlcmd hides, not at all.
func noticeLine(m fmt.Stringer) (string, bool) {
	e, ok := m.(mssql.Error)
	if !ok {
		return m.String(), true
	}
	if quietMessages[e.Number] {
		return "", false
	}
	if e.Class == 0 {
		return e.Message, true
	}
	return formatServerError(e), true
}
