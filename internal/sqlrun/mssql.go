package sqlrun

// SQL Server: one batch at a time on github.com/microsoft/go-mssqldb through
// database/sql, written against the driver's source (v1.11.2).
//
// Each batch goes as a plain SQL batch (no parameters, so CREATE PROCEDURE and
// friends work) with QueryContext and a *sqlexp.ReturnMessage argument. The
// server's messages arrive in order on it: PRINT and RAISERROR of severity 10
// or less as sqlexp.MsgNotice, errors of severity 11 or more as
// sqlexp.MsgError, row counts as sqlexp.MsgRowsAffected. Result sets are
// skipped.
//
// When ctx ends, go-mssqldb sends a TDS attention packet and waits up to 5 s
// (cancelDrainTimeout in its token.go) for the server to acknowledge it
// (MS-TDS 2.2.1.7, 3.3.5.9). The server stops the request at its next
// attention check: WAITFOR, a lock wait and a running query all stop. An
// attention does not by itself roll back an open transaction, and a
// connection whose cancel was not acknowledged is in an unknown state, so a
// caller never pools a connection whose batch was cancelled.

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-sql/sqlexp"
	mssql "github.com/microsoft/go-mssqldb"

	"readpast/internal/resultset"
)

// Querier is what RunMSSQL sends a batch on: a *sql.Conn or *sql.Tx.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Informational messages sqlcmd does not show either: "Changed database
// context to ..." (after USE) and "Changed language setting to ...".
var quietMessages = map[int32]bool{5701: true, 5703: true}

// RunMSSQL sends one batch and reads all it returns. It returns the rows
// affected (as sqlcmd's "(n rows affected)" lines count them: rows written and
// rows a SELECT returned) and the first error the server raised, else the
// error that ended the read (ctx, a broken connection). Messages and errors go
// into msgs in the order the server sent them.
//
// Within a batch SQL Server decides what an error stops: many errors end only
// their statement and the batch goes on. RunMSSQL reads the batch to its end
// either way and reports the first error.
//
// The driver's example reads the message queue in one loop and calls
// NextResultSet for each MsgNextResultSet; this splits the two: a goroutine
// takes the messages while this one walks the token stream with
// NextResultSet, which skips rows. The reason is in the driver's reader
// (processSingleResponse): when the connection breaks while it waits for the
// server's reply, it hands the error to the token stream and ends without
// queuing any message, so a loop waiting in ReturnMessage.Message would wait
// until ctx ends, forever for a task without a timeout. NextResultSet waits
// in the driver's nextToken instead, which returns that error, and sends the
// attention when ctx ends. The message queue holds 15 entries, so it must be
// read while the stream is walked, hence the goroutine.
func RunMSSQL(ctx context.Context, q Querier, text string, msgs *Messages) (affected int64, err error) {
	return RunMSSQLCapturing(ctx, q, text, msgs, nil)
}

// RunMSSQLCapturing is RunMSSQL that keeps the rows of the batch's result
// sets in capture as far as its limits go (resultset.Capture; nil keeps
// nothing and reads as RunMSSQL does). The rows past them are skipped by the
// driver as RunMSSQL skips every row: the batch runs the same either way.
func RunMSSQLCapturing(ctx context.Context, q Querier, text string, msgs *Messages, capture *resultset.Capture) (affected int64, err error) {
	retmsg := &sqlexp.ReturnMessage{}
	rows, err := q.QueryContext(ctx, languageBatch(text), retmsg)
	if err != nil {
		return 0, DescribeMSSQL(err)
	}
	reader := readMessages(retmsg, msgs)
	for rows.NextResultSet() {
		// Each call moves to the next result set or statement end; false at
		// the end of the batch, on a broken connection, or when ctx ends.
		if capture.Wants() && atResultSet(rows) {
			captureSet(rows, capture)
		}
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
		return affected, DescribeMSSQL(streamErr)
	}
	return affected, nil
}

// languageBatch returns text in a form go-mssqldb sends as a SQL batch (a
// language event). The driver sends a request without parameters as an RPC
// call of a stored procedure when its text looks like a procedure name (its
// isProc: no line break, semicolon or quote, and a name without spaces), so
// the last batch of a body without a trailing newline, such as RETURN or
// sp_who, reached the server as a call of a procedure named RETURN ("Could
// not find stored procedure"). A line break at the end is whitespace to
// T-SQL and makes every batch a language event, which runs a bare procedure
// name as sqlcmd does (a procedure name as a batch's first statement runs it,
// Microsoft: "EXECUTE").
func languageBatch(text string) string {
	if strings.ContainsAny(text, "\n\r;'") {
		return text
	}
	return text + "\n"
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

func readMessages(retmsg *sqlexp.ReturnMessage, msgs *Messages) *messageReader {
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
// token stream is walked by RunMSSQL.
func (r *messageReader) handle(m sqlexp.RawMessage, msgs *Messages) {
	switch m := m.(type) {
	case sqlexp.MsgNotice:
		if line, ok := noticeLine(m.Message); ok {
			msgs.Add(line)
		}
	case sqlexp.MsgError:
		e := DescribeMSSQL(m.Error)
		msgs.Add(e.Error())
		if r.first == nil {
			r.first = e
		}
	case sqlexp.MsgRowsAffected:
		r.affected += m.Count
	}
}

// stop ends the reader once RunMSSQL has walked the whole token stream, and
// returns what it gathered.
func (r *messageReader) stop() (affected int64, first error) {
	r.stopWaiting()
	<-r.done
	return r.affected, r.first
}

// ServerError is an error SQL Server raised, worded as sqlcmd prints it.
// errors.As finds the driver's mssql.Error behind it.
type ServerError struct{ err mssql.Error }

func (e ServerError) Error() string { return formatServerError(e.err) }
func (e ServerError) Unwrap() error { return e.err }

// Number is the SQL Server error number.
func (e ServerError) Number() int32 { return e.err.Number }

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

// DescribeMSSQL rewords an error that carries an mssql.Error as a
// ServerError; any other error is returned as it is. When the driver gathered
// several errors from one request it describes the last in the fields and
// lists all in All; the first is shown, as it is usually the cause.
func DescribeMSSQL(err error) error {
	var e mssql.Error
	if err == nil || !errors.As(err, &e) {
		return err
	}
	if len(e.All) > 0 {
		e = e.All[0]
	}
	return ServerError{err: e}
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

// ResetMSSQL resets conn's session now, not at its next use: go-mssqldb
// resets a pooled session (sp_reset_connection, through the TDS
// RESETCONNECTION flag) only with the first request of its next user, so until
// then a session app lock, temporary tables and open cursors a body left
// would stay held by an idle connection. The request flagged to reset is
// resetIsolation: sp_reset_connection resets SET options, temporary tables,
// locks and CONTEXT_INFO but not the transaction isolation level (Microsoft:
// "SET TRANSACTION ISOLATION LEVEL", and the pooling notes of
// sp_reset_connection), so a body that set SERIALIZABLE or SNAPSHOT would
// otherwise hand that level to whoever takes the session next.
func ResetMSSQL(ctx context.Context, conn *sql.Conn) error {
	return conn.Raw(func(dc any) error {
		c, ok := dc.(*mssql.Conn)
		if !ok {
			return fmt.Errorf("resetting the session: the connection is a %T, not go-mssqldb's", dc)
		}
		if err := c.ResetSession(ctx); err != nil {
			return err
		}
		st, err := c.PrepareContext(ctx, resetIsolation)
		if err != nil {
			return err
		}
		defer st.Close()
		_, err = st.(driver.StmtExecContext).ExecContext(ctx, nil)
		return err
	})
}

// resetIsolation is the request that carries the reset: after
// sp_reset_connection the session is at the level every store batch and every
// task starts from. It also clears CONTEXT_INFO, which names the attempt a
// body's session runs (internal/target, lost_sessions_sqlserver.go):
// sp_reset_connection does on SQL Server, Babelfish does not, and a session
// pooled with the name of an attempt that ended must not carry it.
const resetIsolation = "SET TRANSACTION ISOLATION LEVEL READ COMMITTED; SET CONTEXT_INFO 0x;"
