package sqlrun

import (
	"context"
	"database/sql"
	"strings"

	"readpast/internal/resultset"
	"readpast/internal/sqlscript"
)

// SQLiteConn is what ExecSQLite runs a batch on: a *sql.Conn (the target)
// or a *sql.Tx (the store's transactional path).
type SQLiteConn interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// ExecSQLite runs one batch on conn. Without a capture it is one ExecContext,
// as it always was. With one, the batch's statements run one at a time, in
// order, on the same connection (sqlscript.SQLiteStatements): the driver runs
// a batch of several statements but hands back no rows of them, so each is
// stepped through a query of its own and its rows kept up to the capture's
// limits. Every row is stepped either way (a statement's work is done as it
// is stepped), so what runs is what ExecContext would run.
func ExecSQLite(ctx context.Context, conn SQLiteConn, text string, capture *resultset.Capture) error {
	if capture == nil {
		_, err := conn.ExecContext(ctx, text)
		return err
	}
	for _, stmt := range sqlscript.SQLiteStatements(text) {
		if err := querySQLite(ctx, conn, stmt, capture); err != nil {
			return err
		}
	}
	return nil
}

func querySQLite(ctx context.Context, conn SQLiteConn, stmt string, capture *resultset.Capture) error {
	rows, err := conn.QueryContext(ctx, stmt)
	if err != nil {
		return err
	}
	defer rows.Close()
	names, err := rows.Columns()
	if err != nil {
		return err
	}
	var (
		values, dest []any
		kinds        []resultset.Kind
		text         []*string
		keep         = len(names) > 0 && capture.Wants()
	)
	if keep {
		types, err := rows.ColumnTypes()
		if err != nil {
			return err
		}
		kinds = make([]resultset.Kind, len(types))
		for i, t := range types {
			kinds[i] = sqliteKind(t.DatabaseTypeName())
		}
		capture.Begin(names)
		values, dest, text = make([]any, len(names)), make([]any, len(names)), make([]*string, len(names))
		for i := range values {
			dest[i] = &values[i]
		}
	}
	for rows.Next() {
		if !keep {
			continue
		}
		if !capture.WantsRow() {
			keep = false
			continue
		}
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		for i, v := range values {
			text[i] = resultset.Text(v, kinds[i])
		}
		capture.Row(text)
	}
	return rows.Err()
}

// sqliteKind is how values of a column of this declared type read as text:
// a BLOB's bytes as hexadecimal (modernc.org/sqlite returns TEXT as a
// string), and a time the driver parsed from a DATE or DATETIME column as
// written.
func sqliteKind(declared string) resultset.Kind {
	switch {
	case strings.EqualFold(declared, "DATE"):
		return resultset.Date
	}
	return resultset.Binary
}
