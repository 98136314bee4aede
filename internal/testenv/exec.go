package testenv

import (
	"context"
	"database/sql"
	"net/url"
	"readpast/internal/dialect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite" // the "sqlite" driver
)

// Exec runs statements on the Env's database over a connection of its own,
// outside the store: test setup the store's API cannot express (a schema from
// the future, a dirty migration).
func (e *Env) Exec(t *testing.T, query string) {
	t.Helper()
	ExecDSN(t, e.Dialect, e.DSN, query)
}

// QueryInt runs a query returning one integer on the Env's database, outside
// the store: what a test reads of the server itself (open transactions, locks).
func (e *Env) QueryInt(t *testing.T, query string) int64 {
	t.Helper()
	var n int64
	withDB(t, e.Dialect, e.DSN, func(ctx context.Context, q queryer) {
		require.NoError(t, q.QueryRow(ctx, query, &n), "running %q", query)
	})
	return n
}

// QueryStrings runs a query returning one text column on the database at
// dsn, outside the store, and returns its rows in order: what a test reads
// that the store has no reader for (the audit log).
func QueryStrings(t testing.TB, d Dialect, dsn, query string) []string {
	t.Helper()
	var out []string
	withDB(t, d, dsn, func(ctx context.Context, q queryer) {
		var err error
		out, err = q.Strings(ctx, query)
		require.NoError(t, err, "running %q", query)
	})
	return out
}

// ExecDSN runs statements on the database at dsn over a connection of its own.
func ExecDSN(t *testing.T, d Dialect, dsn, query string) {
	t.Helper()
	withDB(t, d, dsn, func(ctx context.Context, q queryer) {
		require.NoError(t, q.Exec(ctx, query), "running %q", query)
	})
}

// queryer is the little of a database connection the helpers use.
type queryer interface {
	Exec(ctx context.Context, query string) error
	QueryRow(ctx context.Context, query string, dest ...any) error
	Strings(ctx context.Context, query string) ([]string, error)
}

func withDB(t testing.TB, d Dialect, dsn string, fn func(context.Context, queryer)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if d == Postgres {
		conn, err := pgx.Connect(ctx, dsn)
		require.NoError(t, err)
		defer conn.Close(context.Background())
		fn(ctx, pgQueryer{conn})
		return
	}
	var db *sql.DB
	if d == SQLServer {
		db = openSQLServer(t, dsn)
	} else {
		_, path, err := dialect.Parse(dsn)
		require.NoError(t, err)
		db, err = sql.Open("sqlite", "file:"+strings.ReplaceAll(url.PathEscape(path), "%2F", "/")+"?_pragma=busy_timeout(10000)")
		require.NoError(t, err)
	}
	defer db.Close()
	fn(ctx, sqlQueryer{db})
}

type pgQueryer struct{ c *pgx.Conn }

func (q pgQueryer) Exec(ctx context.Context, query string) error {
	_, err := q.c.Exec(ctx, query)
	return err
}

func (q pgQueryer) QueryRow(ctx context.Context, query string, dest ...any) error {
	return q.c.QueryRow(ctx, query).Scan(dest...)
}

func (q pgQueryer) Strings(ctx context.Context, query string) ([]string, error) {
	rows, err := q.c.Query(ctx, query)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

type sqlQueryer struct{ db *sql.DB }

func (q sqlQueryer) Exec(ctx context.Context, query string) error {
	_, err := q.db.ExecContext(ctx, query)
	return err
}

func (q sqlQueryer) QueryRow(ctx context.Context, query string, dest ...any) error {
	return q.db.QueryRowContext(ctx, query).Scan(dest...)
}

func (q sqlQueryer) Strings(ctx context.Context, query string) ([]string, error) {
	rows, err := q.db.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
