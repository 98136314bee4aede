package target

// The SQL Server executor, on github.com/microsoft/go-mssqldb through
// database/sql; sqlrun runs the batches (messages, rows, errors, attention).
//
// # How one Run goes
//
//  1. Take one *sql.Conn from the pool for the whole body.
//  2. One round trip: SET TRANSACTION ISOLATION LEVEL READ COMMITTED (every
//     run starts at a known level: sp_reset_connection does not reset it),
//     the attempt's name in CONTEXT_INFO (lost_sessions_sqlserver.go) and
//     SELECT @@SPID, the session id, reported before the body runs.
//  3. Split the body on GO lines (sqlscript, sqlcmd's rules) and send each
//     batch byte for byte as written (no parameters, so CREATE PROCEDURE and
//     friends work), as many times as its "GO n" says, with its messages
//     gathered in order (sqlrun.RunMSSQL).
//  4. Stop after the first batch that raised an error.
//  5. Hand the session back clean, or end it (release).

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strconv"
	"strings"
	"time"

	"readpast/internal/dialect"
	"readpast/internal/mssqllogin"
	"readpast/internal/sqlrun"
	"readpast/internal/sqlscript"
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

type sqlServerTarget struct{ db *sql.DB }

// openSQLServer connects to the SQL Server a sqlserver:// DSN names, with any
// login go-mssqldb takes (mssqllogin), its sessions named name, and checks
// that it answers.
func openSQLServer(ctx context.Context, dsn, name string, pool int) (*sqlServerTarget, error) {
	connector, _, err := mssqllogin.Connector(dsn, name)
	if err != nil {
		return nil, fmt.Errorf("target: %w", err)
	}
	db := sql.OpenDB(connector)
	db.SetMaxIdleConns(sqlServerMaxIdle)
	db.SetConnMaxIdleTime(sqlServerMaxIdleTime)
	db.SetConnMaxLifetime(sqlServerMaxLifetime)
	if pool > 0 {
		db.SetMaxOpenConns(pool)
	}
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("target: connecting to sqlserver: %w", sqlrun.DescribeMSSQL(err))
	}
	return &sqlServerTarget{db: db}, nil
}

func (t *sqlServerTarget) Dialect() dialect.Dialect { return dialect.SQLServer }
func (t *sqlServerTarget) Close() error             { return t.db.Close() }

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
// and the session ended, so nothing it did is kept and no later task inherits it.
func (t *sqlServerTarget) Run(ctx context.Context, body string, onSession func(string)) (res Result, err error) {
	runs, err := sqlscript.Runs(body, sqlscript.TSQL)
	if err != nil {
		return res, err
	}
	conn, err := t.db.Conn(ctx)
	if err != nil {
		return res, notConnected{fmt.Errorf("connecting to the target: %w", sqlrun.DescribeMSSQL(err))}
	}
	msgs := &sqlrun.Messages{}
	capture := captureFor(ctx)
	failed := true // until every batch ran without an error
	defer func() {
		res.Messages, res.Output = msgs.String(), capture.Output()
		if cleanErr := release(ctx, conn, failed || strings.Contains(body, "##")); err == nil {
			err = cleanErr
		}
	}()

	start := startRun
	if name := sessionName(ctx); name != "" {
		// Named in the round trip that starts the run (lost_sessions_sqlserver.go).
		start = "SET CONTEXT_INFO " + sqlrun.MSSQLContextInfo(name) + ";\n" + startRun
	}
	var spid int64
	if err := conn.QueryRowContext(ctx, start).Scan(&spid); err != nil {
		return res, fmt.Errorf("reading the session id: %w", sqlrun.DescribeMSSQL(err))
	}
	res.SessionID = strconv.FormatInt(spid, 10)
	if onSession != nil {
		onSession(res.SessionID)
	}

	for i, run := range runs {
		n, batchErr := sqlrun.RunMSSQLCapturing(ctx, conn, run.Text, msgs, capture)
		res.RowsAffected += n
		if batchErr != nil {
			return res, labelled(runs, i, batchErr)
		}
	}
	failed = false
	return res, nil
}

// startRun sets the isolation level every run starts at and reads the session id.
const startRun = `SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SELECT CAST(@@SPID AS int);`

// release ends the run's hold on its session. The session goes back to the
// pool only after a body that succeeded, and then reset at once
// (sqlrun.ResetMSSQL): a session app lock, temporary tables, cursors and SET
// options it left are gone before anyone else can meet them. After a body
// that failed, was cancelled, or used global temporary tables (which live as
// long as the session that made them, however it is reset), the session is
// ended instead, which rolls back and releases whatever it held; the next
// body gets a fresh one. A transaction a successful body left open is rolled
// back and reported; so is a session that no longer answers.
func release(ctx context.Context, conn *sql.Conn, endSession bool) error {
	if ctx.Err() != nil || endSession {
		// Cancelled mid-statement the stream may be unusable; an attention
		// does not roll back either way.
		discard(conn)
		return nil
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	var open int
	if err := conn.QueryRowContext(cctx, "SELECT @@TRANCOUNT;").Scan(&open); err != nil {
		// The connection broke: after a batch that seemed to succeed this is
		// how a broken connection shows, since the driver's Rows does not
		// always report one.
		discard(conn)
		return fmt.Errorf("the connection failed after the body, so its outcome is unknown: %w", sqlrun.DescribeMSSQL(err))
	}
	if open > 0 {
		// Ending the session would roll back too; rolling back first releases
		// its locks now.
		_, _ = conn.ExecContext(cctx, "IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;")
		discard(conn)
		return fmt.Errorf("the body left a transaction open (@@TRANCOUNT %d) and it was rolled back: end every BEGIN TRANSACTION with COMMIT or ROLLBACK", open)
	}
	if err := sqlrun.ResetMSSQL(cctx, conn); err != nil {
		discard(conn)
		return nil
	}
	_ = conn.Close() // back to the pool
	return nil
}

// discard closes conn's driver connection instead of pooling it: database/sql
// closes a connection for which Raw's function returns driver.ErrBadConn.
func discard(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	_ = conn.Close() // sql.ErrConnDone: Raw has released it already
}
