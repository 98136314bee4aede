package target

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"

	"readpast/internal/queue"
)

// defaultTargetConns caps the target pool unless the DSN sets pool_max_conns:
// PostgreSQL's default max_connections.
const defaultTargetConns = 100

type postgresTarget struct {
	pool *pgxpool.Pool
	// collectors routes each connection's NOTICEs to the execution running on it.
	collectors sync.Map // *pgconn.PgConn → *messages
}

func openPostgres(ctx context.Context, dsn string) (*postgresTarget, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("target: parsing postgres dsn: %w", err)
	}
	if !strings.Contains(dsn, "pool_max_conns") {
		// One connection per running task: pgxpool's default (4 on a 2-core
		// machine) would silently cap a node's workers at that many, the rest
		// waiting for a connection against their timeouts. Connections open on
		// demand, so the cap costs nothing while unused.
		cfg.MaxConns = defaultTargetConns
	}
	t := &postgresTarget{}
	cfg.ConnConfig.OnNotice = func(c *pgconn.PgConn, n *pgconn.Notice) {
		if m, ok := t.collectors.Load(c); ok {
			m.(*messages).add(n.Severity + ": " + n.Message)
		}
	}
	// On cancel or timeout, send a cancel request at once so the server stops the
	// statement (closing the socket alone leaves pg_sleep running); give it two
	// seconds before the socket deadline breaks the connection.
	cfg.ConnConfig.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: 2 * time.Second}
	}
	t.pool, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("target: connecting to postgres: %w", err)
	}
	return t, nil
}

func (t *postgresTarget) Dialect() string { return "postgres" }
func (t *postgresTarget) Close() error    { t.pool.Close(); return nil }

// Run implements Target. Each batch goes through the simple query protocol, so
// a batch may hold several statements, as in psql.
func (t *postgresTarget) Run(ctx context.Context, body string, onSession func(string)) (res Result, err error) {
	conn, err := t.pool.Acquire(ctx)
	if err != nil {
		return res, fmt.Errorf("connecting to the target: %w", err)
	}
	pg := conn.Conn().PgConn()
	res.SessionID = strconv.FormatUint(uint64(pg.PID()), 10)
	if onSession != nil {
		onSession(res.SessionID)
	}
	msgs := &messages{}
	t.collectors.Store(pg, msgs)
	defer func() {
		t.collectors.Delete(pg)
		res.Messages = msgs.String()
		if leftOpen := releasePostgres(ctx, conn); leftOpen && err == nil {
			err = errOpenTransaction
		}
	}()
	for i, batch := range queue.SplitGo(body) {
		results, execErr := pg.Exec(ctx, batch).ReadAll()
		for _, r := range results {
			res.RowsAffected += r.CommandTag.RowsAffected()
		}
		if err := execErr; err != nil {
			return res, fmt.Errorf("batch %d: %w", i+1, err)
		}
	}
	return res, nil
}

// releasePostgres makes the connection clean for the next body and gives it
// back to the pool, or closes it when that cannot be done. A transaction the
// body left open is rolled back and reported (the body's work is gone, so its
// run must not count as a success), and DISCARD ALL undoes what else a body may
// have changed in the session: settings, temporary tables, advisory locks,
// LISTENs, prepared statements. A body cancelled mid-statement closes the
// connection: a cancel request may still be on its way to that backend.
func releasePostgres(ctx context.Context, conn *pgxpool.Conn) (leftOpen bool) {
	pg := conn.Conn().PgConn()
	rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if ctx.Err() != nil || pg.IsClosed() {
		_ = conn.Hijack().Close(rctx)
		return false
	}
	leftOpen = pg.TxStatus() != 'I'
	if leftOpen {
		if _, err := pg.Exec(rctx, "ROLLBACK").ReadAll(); err != nil {
			_ = conn.Hijack().Close(rctx)
			return leftOpen
		}
	}
	if _, err := pg.Exec(rctx, "DISCARD ALL").ReadAll(); err != nil {
		_ = conn.Hijack().Close(rctx)
		return leftOpen
	}
	conn.Release()
	return leftOpen
}
