package target

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"readpast/internal/dialect"
	"readpast/internal/sqlrun"
	"readpast/internal/sqlscript"
)

type sqliteTarget struct{ db *sql.DB }

func openSQLite(ctx context.Context, path string, pool int) (*sqliteTarget, error) {
	// busy_timeout: the store's writer shares the file when target = store.
	dsn := "file:" + strings.ReplaceAll(url.PathEscape(path), "%2F", "/") + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("target: opening sqlite file %s: %w", path, err)
	}
	// A connection per run, closed after it: what a body does to its
	// connection (PRAGMAs, temporary tables, attached files) ends with it.
	// Opening a SQLite connection is a file open, cheap next to a network login.
	db.SetMaxIdleConns(0)
	if pool > 0 {
		db.SetMaxOpenConns(pool)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("target: opening sqlite file %s: %w", path, err)
	}
	return &sqliteTarget{db: db}, nil
}

func (t *sqliteTarget) Dialect() dialect.Dialect { return dialect.SQLite }
func (t *sqliteTarget) Close() error             { return t.db.Close() }

// Run implements Target. modernc.org/sqlite interrupts the running statement
// (sqlite3_interrupt) when ctx ends.
func (t *sqliteTarget) Run(ctx context.Context, body string, onSession func(string)) (res Result, err error) {
	runs, err := sqlscript.Runs(body, sqlscript.SQLite)
	if err != nil {
		return res, err
	}
	conn, err := t.db.Conn(ctx)
	if err != nil {
		return res, fmt.Errorf("connecting to the target: %w", err)
	}
	defer conn.Close() // closes it: the pool keeps no idle connection
	if onSession != nil {
		onSession("")
	}
	// total_changes() counts rows written on this connection; changes() would
	// repeat the last DML's count after a DDL statement.
	var before, after int64
	if err := conn.QueryRowContext(ctx, `SELECT total_changes()`).Scan(&before); err != nil {
		return res, err
	}
	capture := captureFor(ctx)
	defer func() { res.Output = capture.Output() }()
	err = sqlrun.WithSQLiteContext(ctx, func() error {
		for i, run := range runs {
			if err := sqlrun.ExecSQLite(ctx, conn, run.Text, capture); err != nil {
				if ctx.Err() != nil {
					err = context.Cause(ctx)
				}
				return labelled(runs, i, err)
			}
		}
		return nil
	})
	if err != nil {
		res.RowsAffected = changesSince(conn, before)
		return res, err
	}
	if err := conn.QueryRowContext(context.WithoutCancel(ctx), `SELECT total_changes()`).Scan(&after); err == nil {
		res.RowsAffected = after - before
	}
	// ROLLBACK succeeds only inside a transaction: a body that left one open
	// has just had its work undone, so the run must not count as a success.
	if _, err := conn.ExecContext(context.WithoutCancel(ctx), `ROLLBACK`); err == nil {
		return res, errOpenTransaction
	}
	return res, nil
}

// errOpenTransaction fails a body that began a transaction and did not end it.
var errOpenTransaction = errors.New("the body left a transaction open; it was rolled back: end every BEGIN with COMMIT in the body")

func changesSince(conn *sql.Conn, before int64) int64 {
	var after int64
	if err := conn.QueryRowContext(context.Background(), `SELECT total_changes()`).Scan(&after); err != nil {
		return 0
	}
	return after - before
}
