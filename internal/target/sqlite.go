package target

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"strings"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"readpast/internal/dialect"
	"readpast/internal/sqlrun"
	"readpast/internal/sqlscript"
)

// sqliteTarget runs bodies on a SQLite file. A body that can change its
// connection's state (sqliteMayChangeSession) runs on a connection of its
// own from fresh, opened for it and closed after it: what it does to its
// connection (PRAGMAs, temporary tables, attached files) ends with it, and it
// reads no counter (changes(), last_insert_rowid()) another body left. Every
// other body runs on a pooled connection of db, which no such body ever used:
// opening a connection (and reading the file's schema on it) cost about ten
// times a `SELECT 1` body (docs/benchmarks/drain-idle.md).
type sqliteTarget struct {
	db    *sql.DB // pooled: bodies that leave their connection as they found it
	fresh *sql.DB // no idle connections: a connection per run
}

func openSQLite(ctx context.Context, path string, pool int) (*sqliteTarget, error) {
	// busy_timeout: the store's writer shares the file when target = store.
	dsn := "file:" + strings.ReplaceAll(url.PathEscape(path), "%2F", "/") + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"
	t := &sqliteTarget{}
	for _, db := range []**sql.DB{&t.db, &t.fresh} {
		var err error
		if *db, err = sql.Open("sqlite", dsn); err != nil {
			t.Close()
			return nil, fmt.Errorf("target: opening sqlite file %s: %w", path, err)
		}
		if pool > 0 {
			(*db).SetMaxOpenConns(pool)
		}
	}
	t.db.SetMaxIdleConns(cmp.Or(pool, defaultTargetConns))
	t.fresh.SetMaxIdleConns(0)
	if err := sqlrun.PingSQLite(ctx, t.db); err != nil {
		t.Close()
		return nil, fmt.Errorf("target: opening sqlite file %s: %w", path, err)
	}
	return t, nil
}

func (t *sqliteTarget) Dialect() dialect.Dialect { return dialect.SQLite }

func (t *sqliteTarget) Close() error {
	var errs []error
	for _, db := range []*sql.DB{t.db, t.fresh} {
		if db != nil {
			errs = append(errs, db.Close())
		}
	}
	return errors.Join(errs...)
}

// Run implements Target. modernc.org/sqlite interrupts the running statement
// (sqlite3_interrupt) when ctx ends.
func (t *sqliteTarget) Run(ctx context.Context, body string, onSession func(string)) (res Result, err error) {
	runs, err := sqlscript.Runs(body, sqlscript.SQLite)
	if err != nil {
		return res, err
	}
	pooled := !sqliteMayChangeSession(body)
	db := t.db
	if !pooled {
		db = t.fresh
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return res, fmt.Errorf("connecting to the target: %w", err)
	}
	keep := false // whether the connection goes back to the pool clean
	defer func() {
		if !keep {
			// Closes the connection instead of pooling it.
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		conn.Close()
	}()
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
	// A body that succeeded, was not stopped and left no transaction open
	// leaves a pooled connection as it found it.
	keep = pooled && ctx.Err() == nil
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
