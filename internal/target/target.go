// Package target runs task bodies against the target database (SPEC §5): one
// connection per execution, the body split into batches on GO lines, the
// statement cancelled on the server when the context ends, and the session id,
// rows affected and server messages recorded. Driver types stay in this package.
package target

import (
	"context"
	"fmt"

	"readpast/internal/appname"
	"readpast/internal/dialect"
	"readpast/internal/resultset"
	"readpast/internal/sqlscript"
)

// Result is what one execution reports.
type Result struct {
	SessionID    string // SPID on SQL Server, backend pid on PostgreSQL, "" on SQLite
	RowsAffected int64
	Messages     string // PRINT / RAISERROR (low severity) / NOTICE, capped at MaxMessages
	// Output is what the run kept of its result sets when its context asked
	// for it (WithResultRows); nil otherwise, or when it returned none.
	Output *resultset.Output
}

// Target executes bodies on one database.
type Target interface {
	// Dialect is the dialect of the database the bodies run on.
	Dialect() dialect.Dialect
	// Run executes body's batches in order on one connection, stopping at the
	// first error. onSession, if not nil, is called with the session id before the
	// body starts. When ctx ends the running statement is cancelled on the server.
	// The Result is filled as far as execution got, also on error.
	Run(ctx context.Context, body string, onSession func(id string)) (Result, error)
	// Close releases the target's connections.
	Close() error
}

// Open connects to the target a DSN names (same DSN forms as the store), its
// sessions named "ReadPast worker".
func Open(ctx context.Context, dsn string) (Target, error) { return OpenOnNode(ctx, dsn, "") }

// OpenOnNode is Open for node: its sessions are named "ReadPast worker <node>"
// (appname.For), SQL Server's program_name and PostgreSQL's application_name,
// unless the DSN names them itself.
func OpenOnNode(ctx context.Context, dsn, node string) (Target, error) {
	return OpenPooled(ctx, dsn, node, 0)
}

// OpenPooled is OpenOnNode with the target's connections capped at pool
// (0: the dialect's default; a PostgreSQL DSN's pool_max_conns wins).
func OpenPooled(ctx context.Context, dsn, node string, pool int) (Target, error) {
	d, path, err := dialect.Parse(dsn)
	if err != nil {
		return nil, fmt.Errorf("target: %w", err)
	}
	name := appname.For(appname.Worker, node)
	switch d {
	case dialect.Postgres:
		return openPostgres(ctx, dsn, name, pool)
	case dialect.SQLServer:
		return openSQLServer(ctx, dsn, name, pool)
	}
	return openSQLite(ctx, path, pool)
}

// labelled says which run of a body an error came from ("batch 2 of 3: …")
// when the body has more than one.
func labelled(runs []sqlscript.Run, i int, err error) error {
	if len(runs) < 2 {
		return err
	}
	return fmt.Errorf("%s: %w", runs[i].Label, err)
}
