package target

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"

	"readpast/internal/queue"
)

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
		// A body that left a transaction open, or was cancelled mid-statement,
		// leaves a connection the next task must not inherit.
		if ctx.Err() != nil || pg.IsClosed() || pg.TxStatus() != 'I' {
			_ = conn.Hijack().Close(context.Background())
			return
		}
		conn.Release()
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
