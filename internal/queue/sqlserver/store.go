package sqlserver

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/golang-migrate/migrate/v4/database"
	migratesqlserver "github.com/golang-migrate/migrate/v4/database/sqlserver"
	mssql "github.com/microsoft/go-mssqldb"

	"readpast/internal/appname"
	"readpast/internal/dialect"
	"readpast/internal/mssqllogin"
	"readpast/internal/queue"
	"readpast/migrations"
)

// minCompatibilityLevel is SQL Server 2016's level: OPENJSON needs it.
const minCompatibilityLevel = 130

// Store is the SQL Server implementation of queue.Store.
type Store struct {
	db        *sql.DB
	database  string // DB_NAME() of the store: a transactional body's USE is undone to it
	connector *mssql.Connector
	sessions  *countingConnector // the pool's connector: counts logins
	opts      queue.Options
	log       *slog.Logger
}

var _ queue.Store = (*Store)(nil)

// Open connects to the SQL Server database named by dsn (any form go-mssqldb
// accepts: sqlserver://user:pass@host?database=db, or an ADO string) and
// checks that it answers. It does not migrate: call Migrate.
func Open(ctx context.Context, dsn string, opts queue.Options) (*Store, error) {
	connector, _, err := mssqllogin.Connector(dsn, appname.For(appname.Store, opts.Node))
	if err != nil {
		return nil, fmt.Errorf("sqlserver: opening the store: %w", err)
	}
	sessions := &countingConnector{Connector: connector}
	db := sql.OpenDB(sessions)
	configurePool(db)
	var database string
	if err := db.QueryRowContext(ctx, "SELECT DB_NAME();").Scan(&database); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("sqlserver: connecting to the store: %w", err)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Store{db: db, database: database, connector: connector, sessions: sessions, opts: opts, log: logger}, nil
}

// Dialect returns dialect.SQLServer.
func (s *Store) Dialect() dialect.Dialect { return dialect.SQLServer }

// Capabilities implements queue.Store: claimers read past each other's locked
// rows (READPAST); there is no push of enqueues to other nodes, which poll.
func (s *Store) Capabilities() queue.Capabilities {
	// FinishBatch: each attempt ends in its own transaction, a few sessions
	// at once (finishAll), so a bigger batch saves nothing, and one call of
	// 50 stays well inside the node's store timeout even where a finish takes
	// 100 ms (Babelfish under load).
	return queue.Capabilities{ConcurrentWriters: true, FinishBatch: 50}
}

// Listen implements queue.Listener: SQL Server has no LISTEN/NOTIFY that a
// plain login can use (Service Broker needs setup a DBA must own), so nodes poll.
func (s *Store) Listen(context.Context, func(string)) error {
	return fmt.Errorf("sqlserver: listening for enqueues: %w", queue.ErrNotSupported)
}

// Close releases the store's connections.
func (s *Store) Close() error { return s.db.Close() }

// Migrate applies the embedded sqlserver migrations with golang-migrate. It
// refuses a database that cannot run OPENJSON (compatibility level below 130),
// a dirty schema and a schema newer than this binary.
//
// What decides is whether OPENJSON runs, not the level's number: Babelfish for
// PostgreSQL reports level 120 and has no ALTER DATABASE, yet runs OPENJSON.
// On SQL Server the two agree (OPENJSON needs level 130, Microsoft's
// "OPENJSON"), and the error names the level so a DBA knows what to change.
func (s *Store) Migrate(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, openJSONProbe); err != nil {
		var level int
		if lerr := s.db.QueryRowContext(ctx, compatibilityLevelSQL).Scan(&level); lerr != nil {
			return wrap("checking that the store database runs OPENJSON", err)
		}
		return fmt.Errorf("sqlserver: the store database cannot run OPENJSON (%v); it is at compatibility level %d and ReadPast needs %d (SQL Server 2016) or higher: run ALTER DATABASE CURRENT SET COMPATIBILITY_LEVEL = %d",
			err, level, minCompatibilityLevel, minCompatibilityLevel)
	}
	return s.withMigrateDriver(ctx, func(db *sql.DB, drv database.Driver) error {
		return migrations.Up(ctx, dialect.SQLServer, db, drv)
	})
}

// MigrateDown reverts every migration, newest first.
func (s *Store) MigrateDown(ctx context.Context) error {
	return s.withMigrateDriver(ctx, func(_ *sql.DB, drv database.Driver) error {
		return migrations.Down(dialect.SQLServer, drv)
	})
}

// openJSONProbe runs OPENJSON the way the store's batches do.
const openJSONProbe = `SELECT COUNT(*) FROM OPENJSON(N'[{"id":"1"}]') AS a CROSS APPLY OPENJSON(a.value) WITH (id bigint '$.id') AS j;`

// SchemaVersion reports the applied migration version and the newest one
// embedded. Like golang-migrate itself, it creates the empty version table if
// the database has none yet.
func (s *Store) SchemaVersion(ctx context.Context) (queue.SchemaStatus, error) {
	var st queue.SchemaStatus
	err := s.withMigrateDriver(ctx, func(_ *sql.DB, drv database.Driver) error {
		var err error
		st, err = migrations.Status(dialect.SQLServer, drv)
		return err
	})
	return st, err
}

// withMigrateDriver runs fn with golang-migrate's sqlserver driver on a pool of
// its own: the driver pins one connection for its session-owned sp_getapplock
// and closes the *sql.DB it was given, so it must not get the store's pool.
func (s *Store) withMigrateDriver(ctx context.Context, fn func(*sql.DB, database.Driver) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	db := sql.OpenDB(s.connector)
	drv, err := migratesqlserver.WithInstance(db, &migratesqlserver.Config{MigrationsTable: migrations.Table})
	if err != nil {
		_ = db.Close()
		return wrap("opening the migration driver", err)
	}
	err = fn(db, drv)
	if cerr := drv.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("sqlserver: closing the migration driver: %w", cerr)
	}
	return err
}

// quoteName brackets an identifier the way QUOTENAME does.
func quoteName(s string) string { return "[" + strings.ReplaceAll(s, "]", "]]") + "]" }
