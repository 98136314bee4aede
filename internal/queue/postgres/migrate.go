package postgres

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/golang-migrate/migrate/v4/database"
	pgxmigrate "github.com/golang-migrate/migrate/v4/database/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"readpast/internal/dialect"
	"readpast/internal/queue"
	"readpast/migrations"
)

// Migrate implements queue.Store. golang-migrate needs a database/sql handle; it
// is opened for the migration only and closed after.
func (s *Store) Migrate(ctx context.Context) error {
	return s.withMigrateDriver(ctx, "migrating the store schema", func(db *sql.DB, drv database.Driver) error {
		return migrations.Up(ctx, dialect.Postgres, db, drv)
	})
}

// MigrateDown implements queue.Store.
func (s *Store) MigrateDown(ctx context.Context) error {
	return s.withMigrateDriver(ctx, "reverting the store schema", func(_ *sql.DB, drv database.Driver) error {
		return migrations.Down(dialect.Postgres, drv)
	})
}

// SchemaVersion implements queue.Store.
func (s *Store) SchemaVersion(ctx context.Context) (queue.SchemaStatus, error) {
	var st queue.SchemaStatus
	err := s.withMigrateDriver(ctx, "reading the schema version", func(_ *sql.DB, drv database.Driver) error {
		var err error
		st, err = migrations.Status(dialect.Postgres, drv)
		return err
	})
	return st, err
}

func (s *Store) withMigrateDriver(ctx context.Context, what string, fn func(*sql.DB, database.Driver) error) error {
	db := stdlib.OpenDB(*s.conn.Copy())
	defer db.Close()
	if err := db.PingContext(ctx); err != nil {
		return wrap(err, "%s: connecting", what)
	}
	drv, err := pgxmigrate.WithInstance(db, &pgxmigrate.Config{MigrationsTable: migrations.Table})
	if err != nil {
		return wrap(err, "%s: preparing the migration driver", what)
	}
	// The driver's Close closes db too; the deferred db.Close is then a no-op.
	defer drv.Close()
	if err := fn(db, drv); err != nil {
		return fmt.Errorf("postgres: %s: %w", what, err)
	}
	return nil
}
