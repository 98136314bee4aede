// Package open picks the queue.Store dialect from a DSN (SPEC §2):
// sqlserver://… is SQL Server, postgres:// or postgresql:// is PostgreSQL, and
// sqlite://path or a bare path is a SQLite file. An empty DSN is the embedded
// default, readpast.db in the working directory.
package open

import (
	"context"

	"readpast/internal/dialect"
	"readpast/internal/queue"
	"readpast/internal/queue/postgres"
	"readpast/internal/queue/sqlite"
	"readpast/internal/queue/sqlserver"
)

// Store opens the store a DSN names, behind the checks every dialect shares
// (queue.Checked): the dialect's store receives checked values only. It does
// not migrate.
func Store(ctx context.Context, dsn string, opts queue.Options) (queue.Store, error) {
	s, err := dialectStore(ctx, dsn, opts)
	if err != nil {
		return nil, err
	}
	return queue.Checked(s, opts), nil
}

// dialectStore opens the dialect's own store.
func dialectStore(ctx context.Context, dsn string, opts queue.Options) (queue.Store, error) {
	d, path, err := dialect.Parse(dsn)
	if err != nil {
		return nil, err
	}
	switch d {
	case dialect.SQLServer:
		return sqlserver.Open(ctx, dsn, opts)
	case dialect.Postgres:
		return postgres.Open(ctx, dsn, opts)
	}
	return sqlite.Open(ctx, path, opts)
}
