// Package postgres is the PostgreSQL queue.Store, on pgx v5 (pgxpool).
//
// The state machine lives in PL/pgSQL functions created by the schema baseline
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
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"

	"readpast/internal/appname"
	"readpast/internal/dialect"
	"readpast/internal/queue"
	"readpast/internal/sqlrun"
)

// defaultMaxConns is the pool size unless the DSN sets pool_max_conns. pgxpool's
// own default (4 on a 2-core machine) would make a node's workers queue for
// connections instead of for work.
const defaultMaxConns = 32

// Store is the PostgreSQL queue.Store. It is safe for concurrent use.
type Store struct {
	pool *pgxpool.Pool
	// txpool runs transactional bodies (RunTransactional). Its connections
	// use no named prepared statements (QueryExecModeExec), so each is reset
	// whole with DISCARD ALL after a body; pool keeps pgx's statement cache.
	txpool *pgxpool.Pool
	conn   *pgx.ConnConfig // a copy for Migrate's short-lived database/sql handle
	// listenerName is the application_name of Listen's connection.
	listenerName string
	opts         queue.Options
	log          *slog.Logger
	notices      *sqlrun.NoticeRouter
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
	listener := nameSessions(cfg.ConnConfig, appname.For(appname.Store, opts.Node), opts.Node)
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Store{conn: cfg.ConnConfig.Copy(), listenerName: listener, opts: opts, log: log, notices: &sqlrun.NoticeRouter{}, listenCheck: listenCheckEvery}
	for k, v := range deadSessionParams(opts.DeadSessionBound) {
		if _, set := cfg.ConnConfig.RuntimeParams[k]; !set { // the DSN's own wins
			cfg.ConnConfig.RuntimeParams[k] = v
		}
	}
	// On a cancelled context, ask the server to cancel the statement before
	// giving up on the socket: a task's timeout must stop its SQL on the server,
	// not only the wait for it.
	cfg.ConnConfig.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: 5 * time.Second}
	}
	sqlrun.CheckClientGone(cfg) // a transactional body's session above all
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: opening the store pool: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: connecting to the store database: %w", err)
	}
	txcfg := cfg.Copy()
	txcfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
	txcfg.ConnConfig.OnNotice = s.notices.Handle
	if s.txpool, err = pgxpool.NewWithConfig(ctx, txcfg); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: opening the transactional pool: %w", err)
	}
	s.pool = pool
	return s, nil
}

// deadSessionParams bound how long the server keeps the session of a node
// that stopped answering while it held a transaction (queue.Options): the
// server ends a session idle in a transaction for longer than bound, and its
// TCP keepalives find a peer gone within about two thirds of it (idle a
// third, then three probes a ninth apart), as tcp_user_timeout does for data
// left unacknowledged. Without them a partitioned node's session holds its
// locks until the operating system's keepalive notices, about two hours. A
// live node is never idle in a transaction for longer than a round trip. The
// TCP settings do nothing on a unix socket.
func deadSessionParams(bound time.Duration) map[string]string {
	if bound <= 0 {
		bound = queue.DefaultDeadSessionBound
	}
	secs := func(d time.Duration) string { return strconv.Itoa(max(1, int(d/time.Second))) }
	ms := strconv.FormatInt(bound.Milliseconds(), 10)
	return map[string]string{
		"idle_in_transaction_session_timeout": ms,
		"tcp_keepalives_idle":                 secs(bound / 3),
		"tcp_keepalives_interval":             secs(bound / 9),
		"tcp_keepalives_count":                "3",
		"tcp_user_timeout":                    ms,
	}
}

// Dialect implements queue.Store.
func (s *Store) Dialect() dialect.Dialect { return dialect.Postgres }

// Capabilities implements queue.Store: LISTEN/NOTIFY wakes other nodes, and
// claimers skip each other's locked rows (FOR UPDATE SKIP LOCKED).
func (s *Store) Capabilities() queue.Capabilities {
	return queue.Capabilities{Listen: true, ConcurrentWriters: true, FinishBatch: 5000}
}

// Close implements queue.Store: it waits for connections in use to come back.
func (s *Store) Close() error {
	s.txpool.Close()
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

// conn is what a write runs its statements on: a connection of the pool.
type conn = *pgxpool.Conn

// write runs fn on a connection of its own. Waiting for the connection follows
// ctx; fn itself runs under queue.Detached, so a write that was sent runs to
// its end and its result is read even when ctx ends meanwhile (a stopping
// node). A connection whose request that write timeout interrupted is closed,
// never pooled.
func (s *Store) write(ctx context.Context, fn func(ctx context.Context, c conn) error) error {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	dctx, cancel := queue.Detached(ctx)
	defer cancel()
	err = fn(dctx, c)
	if err != nil && dctx.Err() != nil {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = c.Hijack().Close(cctx)
		return err
	}
	c.Release()
	return err
}

// exec runs one writing statement through write.
func (s *Store) exec(ctx context.Context, sql string, args ...any) error {
	_, err := s.execTag(ctx, sql, args...)
	return err
}

// execTag runs one writing statement through write and returns its tag.
func (s *Store) execTag(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	var tag pgconn.CommandTag
	err := s.write(ctx, func(ctx context.Context, c conn) error {
		var err error
		tag, err = c.Exec(ctx, sql, args...)
		return err
	})
	return tag, err
}

// isUniqueViolation reports whether err is PostgreSQL's unique_violation.
func isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}
