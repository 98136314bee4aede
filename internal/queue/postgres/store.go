// Package postgres is the PostgreSQL queue.Store, on pgx v5 (pgxpool).
//
// The state machine lives in PL/pgSQL functions created by migration 1
// (migrations/postgres): readpast_claim, readpast_enqueue, readpast_end_attempts,
// readpast_cancel and readpast_retry. Each is one statement, so a claim, a batch
// enqueue or a batch of finishes is one round trip and one short transaction, and
// every function takes its row locks in one global order (see the migration's
// header) so that writers cannot deadlock. Times come from the database clock.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"

	"readpast/internal/queue"
)

const dialect = "postgres"

// defaultMaxConns is the pool size unless the DSN sets pool_max_conns. pgxpool's
// own default (4 on a 2-core machine) would make a node's workers queue for
// connections instead of for work.
const defaultMaxConns = 32

// Store is the PostgreSQL queue.Store. It is safe for concurrent use.
type Store struct {
	pool    *pgxpool.Pool
	conn    *pgx.ConnConfig // a copy for Migrate's short-lived database/sql handle
	opts    queue.Options
	log     *slog.Logger
	notices *noticeRouter
	// listenCheck is how long Listen waits for a notification before checking
	// its connection (listenCheckEvery; tests shorten it).
	listenCheck time.Duration
}

var _ queue.Store = (*Store)(nil)

// Open connects to the database at dsn (a postgres:// URL or key=value string)
// and checks that it answers. It does not migrate: call Migrate first on a new
// database.
func Open(ctx context.Context, dsn string, opts queue.Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: parsing the store DSN: %w", err)
	}
	if !strings.Contains(dsn, "pool_max_conns") {
		cfg.MaxConns = defaultMaxConns
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Store{conn: cfg.ConnConfig.Copy(), opts: opts, log: log, notices: newNoticeRouter(), listenCheck: listenCheckEvery}
	cfg.ConnConfig.OnNotice = s.notices.handle
	// On a cancelled context, ask the server to cancel the statement before
	// giving up on the socket: a task's timeout must stop its SQL on the server,
	// not only the wait for it.
	cfg.ConnConfig.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: 5 * time.Second}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: opening the store pool: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: connecting to the store database: %w", err)
	}
	s.pool = pool
	return s, nil
}

// Dialect implements queue.Store.
func (s *Store) Dialect() string { return dialect }

// Capabilities implements queue.Store: LISTEN/NOTIFY wakes other nodes, and
// claimers skip each other's locked rows (FOR UPDATE SKIP LOCKED).
func (s *Store) Capabilities() queue.Capabilities {
	return queue.Capabilities{Listen: true, ConcurrentWriters: true}
}

// Close implements queue.Store: it waits for connections in use to come back.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// wrap says what the store was doing when err happened, keeping err for errors.Is.
func wrap(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("postgres: "+format+": %w", append(args, err)...)
}

// isNoRows reports whether err is pgx's "no rows in result set".
func isNoRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }
