// Package sqlite is the embedded, zero-setup queue.Store: one SQLite file in WAL
// mode through modernc.org/sqlite (pure Go). SQLite has one writer at a time, so
// the store keeps one writer connection (every write is a short BEGIN IMMEDIATE
// transaction) and a separate pool of read-only connections, so dashboard reads
// never wait for a claim.
package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"time"

	msqlite "github.com/golang-migrate/migrate/v4/database/sqlite"
	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"readpast/internal/dialect"
	"readpast/internal/queue"
	"readpast/internal/sqlrun"
	"readpast/migrations"
)

// Store is the SQLite queue.Store.
type Store struct {
	path   string
	w      *sql.DB // one connection: SQLite's single writer
	r      *sql.DB // read-only pool
	bodies *sql.DB // transactional bodies: a fresh connection each, closed after it
	opts   queue.Options
	log    *slog.Logger
	nowFor func() time.Time
}

var _ queue.Store = (*Store)(nil)

// Open opens (creating if needed) the SQLite file at path. It does not migrate.
func Open(ctx context.Context, path string, opts queue.Options) (*Store, error) {
	if path == "" {
		return nil, errors.New("sqlite: empty database path")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	// busy_timeout covers other processes on the same file; synchronous stays FULL
	// (the default) because a queue must not lose a committed completion.
	pragmas := "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(on)"
	w, err := sql.Open("sqlite", "file:"+escapePath(path)+"?"+pragmas+"&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("opening sqlite file %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetConnMaxIdleTime(0)
	if err := sqlrun.PingSQLite(ctx, w); err != nil {
		w.Close()
		return nil, fmt.Errorf("opening sqlite file %s: %w", path, err)
	}
	r, err := sql.Open("sqlite", "file:"+escapePath(path)+"?"+pragmas+"&_pragma=query_only(1)")
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("opening sqlite file %s for reading: %w", path, err)
	}
	r.SetMaxOpenConns(4)
	bodies, err := sql.Open("sqlite", "file:"+escapePath(path)+"?"+pragmas+"&_txlock=immediate")
	if err != nil {
		w.Close()
		r.Close()
		return nil, fmt.Errorf("opening sqlite file %s for transactional bodies: %w", path, err)
	}
	bodies.SetMaxIdleConns(0)
	return &Store{path: path, w: w, r: r, bodies: bodies, opts: opts, log: log, nowFor: time.Now}, nil
}

func escapePath(p string) string {
	return strings.ReplaceAll(url.PathEscape(p), "%2F", "/")
}

// Dialect implements queue.Store.
func (s *Store) Dialect() dialect.Dialect { return dialect.SQLite }

// Capabilities implements queue.Store: no LISTEN (nodes poll), and one writer
// at a time.
func (s *Store) Capabilities() queue.Capabilities { return queue.Capabilities{} }

// Listen implements queue.Listener: SQLite cannot push enqueues to other
// processes, so nodes poll.
func (s *Store) Listen(context.Context, func(string)) error {
	return fmt.Errorf("sqlite: listening for enqueues: %w", queue.ErrNotSupported)
}

// Close implements queue.Store.
func (s *Store) Close() error {
	return errors.Join(s.bodies.Close(), s.r.Close(), s.w.Close())
}

// Migrate implements queue.Store.
func (s *Store) Migrate(ctx context.Context) error {
	drv, err := s.migrateDriver(ctx)
	if err != nil {
		return err
	}
	return migrations.Up(ctx, dialect.SQLite, s.w, drv)
}

// MigrateDown implements queue.Store.
func (s *Store) MigrateDown(ctx context.Context) error {
	drv, err := s.migrateDriver(ctx)
	if err != nil {
		return err
	}
	return migrations.Down(dialect.SQLite, drv)
}

// SchemaVersion implements queue.Store.
func (s *Store) SchemaVersion(ctx context.Context) (queue.SchemaStatus, error) {
	drv, err := s.migrateDriver(ctx)
	if err != nil {
		return queue.SchemaStatus{}, err
	}
	return migrations.Status(dialect.SQLite, drv)
}

// migrateDriver wraps the writer; golang-migrate's driver takes its own connection
// from the pool, which here is the single writer, so migrations never race writes.
func (s *Store) migrateDriver(ctx context.Context) (*msqlite.Sqlite, error) {
	if err := s.w.PingContext(ctx); err != nil {
		return nil, fmt.Errorf("connecting to sqlite file %s: %w", s.path, err)
	}
	drv, err := msqlite.WithInstance(s.w, &msqlite.Config{MigrationsTable: migrations.Table})
	if err != nil {
		return nil, fmt.Errorf("preparing sqlite migrations: %w", err)
	}
	return drv.(*msqlite.Sqlite), nil
}

// write runs fn in one write transaction on the single writer connection.
// Waiting for the writer follows ctx; the transaction itself runs under
// queue.Detached, so a write that has begun runs to its commit and its result
// is read even when ctx ends meanwhile (a stopping node).
func (s *Store) write(ctx context.Context, what string, fn func(ctx context.Context, tx *sql.Tx, now int64) error) error {
	return s.writeOn(ctx, what, true, fn)
}

// writeUndurable runs fn as write does, but its commit does not wait for the
// disk (synchronous = NORMAL for this one transaction; WAL mode keeps the
// file consistent, and a power loss may undo only the latest such commits).
// Only for purges: a purge that a crash undoes is done again by the next, and
// the fsync of each purge batch was most of the time it held the one writer
// that claims wait for (docs/benchmarks/backlog-and-retention.md).
func (s *Store) writeUndurable(ctx context.Context, what string, fn func(ctx context.Context, tx *sql.Tx, now int64) error) error {
	return s.writeOn(ctx, what, false, fn)
}

func (s *Store) writeOn(ctx context.Context, what string, durable bool, fn func(ctx context.Context, tx *sql.Tx, now int64) error) (err error) {
	c, err := s.w.Conn(ctx)
	if err != nil {
		return fmt.Errorf("%s: waiting for the writer: %w", what, err)
	}
	defer c.Close()
	dctx, cancel := queue.Detached(ctx)
	defer cancel()
	if !durable {
		if _, err := c.ExecContext(dctx, "PRAGMA synchronous = NORMAL"); err != nil {
			return fmt.Errorf("%s: relaxing synchronous: %w", what, err)
		}
		defer func() {
			// Every other write must wait for the disk again; a connection
			// that cannot be told so is thrown away (a new one starts FULL).
			if _, rerr := c.ExecContext(dctx, "PRAGMA synchronous = FULL"); rerr != nil {
				_ = c.Raw(func(any) error { return driver.ErrBadConn })
				err = errors.Join(err, fmt.Errorf("%s: restoring synchronous: %w", what, rerr))
			}
		}()
	}
	tx, err := c.BeginTx(dctx, nil)
	if err != nil {
		return fmt.Errorf("%s: beginning transaction: %w", what, err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if err := fn(dctx, tx, s.now()); err != nil {
		return fmt.Errorf("%s: %w", what, timedOut(dctx, err))
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("%s: committing: %w", what, timedOut(dctx, err))
	}
	return nil
}

// timedOut says why a write failed when its time ran out: database/sql rolls
// the transaction back then, and the statement after reports only "transaction
// has already been committed or rolled back", which tells a DBA nothing.
func timedOut(dctx context.Context, err error) error {
	if errors.Is(dctx.Err(), context.DeadlineExceeded) && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("the write ran past the store's write timeout of %s and was rolled back (a slow disk or a very large batch): %w", queue.WriteTimeout, err)
	}
	return err
}

func (s *Store) now() int64 { return s.nowFor().UnixMicro() }

func micros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(v int64) time.Time { return time.UnixMicro(v).UTC() }

func nullMicros(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return fromMicros(v.Int64)
}

func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// newToken returns a random positive 63-bit fencing token.
func newToken() int64 {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("reading random bytes for a lease token: %v", err))
	}
	v := int64(binary.BigEndian.Uint64(b[:]) >> 1)
	if v == 0 {
		v = 1
	}
	return v
}

func (s *Store) audit(tx *sql.Tx, now int64, actor, action, target, detail string) error {
	_, err := tx.Exec(`INSERT INTO readpast_audit (at, actor, action, target, detail) VALUES (?, ?, ?, ?, ?)`,
		now, actor, action, target, detail)
	if err != nil {
		return fmt.Errorf("recording audit row: %w", err)
	}
	return nil
}

// isUniqueViolation reports whether err is SQLite's UNIQUE constraint failure.
func isUniqueViolation(err error) bool {
	return err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed")
}
