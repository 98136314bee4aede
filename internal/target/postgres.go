package target

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"

	"readpast/internal/dialect"
	"readpast/internal/sqlrun"
	"readpast/internal/sqlscript"
)

// defaultTargetConns caps the target pool unless the DSN sets pool_max_conns:
// PostgreSQL's default max_connections.
const defaultTargetConns = 100

type postgresTarget struct {
	pool *pgxpool.Pool
	// notices routes each connection's NOTICEs to the execution running on it.
	notices sqlrun.NoticeRouter
	// untracked: a session of the target had track_activities off, so
	// pg_stat_activity does not show its statements and a body's attempt is
	// marked by its session's name instead (attempt_mark.go).
	untracked atomic.Bool
}

// openPostgres connects to the PostgreSQL database dsn names, its sessions'
// application_name name unless the DSN sets one.
func openPostgres(ctx context.Context, dsn, name string, pool int) (*postgresTarget, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("target: parsing postgres dsn: %w", err)
	}
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = name
	}
	if !strings.Contains(dsn, "pool_max_conns") {
		// One connection per running task: pgxpool's default (4 on a 2-core
		// machine) would silently cap a node's workers at that many, the rest
		// waiting for a connection against their timeouts. Connections open on
		// demand, so the cap costs nothing while unused.
		cfg.MaxConns = defaultTargetConns
		if pool > 0 {
			cfg.MaxConns = int32(pool)
		}
	}
	t := &postgresTarget{}
	cfg.ConnConfig.OnNotice = t.notices.Handle
	cfg.AfterConnect = t.checkTracked
	// On cancel or timeout, send a cancel request at once so the server stops the
	// statement (closing the socket alone leaves pg_sleep running); give it two
	// seconds before the socket deadline breaks the connection.
	cfg.ConnConfig.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: 2 * time.Second}
	}
	sqlrun.CheckClientGone(cfg)
	t.pool, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("target: connecting to postgres: %w", err)
	}
	return t, nil
}

func (t *postgresTarget) Dialect() dialect.Dialect { return dialect.Postgres }
func (t *postgresTarget) Close() error             { t.pool.Close(); return nil }

// Run implements Target. Each batch goes through the simple query protocol, so
// a batch may hold several statements, as in psql. The session reset that
// makes the connection clean for the next body (DISCARD ALL) is written
// together with the last batch, so a one-batch body costs one round trip
// (docs/benchmarks/time-per-task.md, "What changed the figures": the separate
// reset cost a tenth of the throughput).
func (t *postgresTarget) Run(ctx context.Context, body string, onSession func(string)) (res Result, err error) {
	runs, err := sqlscript.Runs(body, sqlscript.PostgreSQL)
	if err != nil {
		return res, err
	}
	conn, err := t.pool.Acquire(ctx)
	if err != nil {
		return res, notConnected{fmt.Errorf("connecting to the target: %w", err)}
	}
	pg := conn.Conn().PgConn()
	res.SessionID = strconv.FormatUint(uint64(pg.PID()), 10)
	if onSession != nil {
		onSession(res.SessionID)
	}
	msgs := &sqlrun.Messages{}
	capture := captureFor(ctx)
	stopNotices := t.notices.Listen(pg, msgs)
	// On cancel or timeout a cancel request stops the statement on the server;
	// two seconds later the socket deadline breaks a read that still waits.
	unwatch := sqlrun.WatchPostgres(ctx, pg)
	reset := false // whether DISCARD ALL ran and succeeded
	defer func() {
		unwatch()
		stopNotices()
		res.Messages, res.Output = msgs.String(), capture.Output()
		if leftOpen := releasePostgres(ctx, conn, reset); leftOpen && err == nil {
			err = errOpenTransaction
		}
	}()
	marker, setName := t.attemptMark(sessionName(ctx))
	for i, run := range runs {
		var queries []string
		if i == 0 && setName != "" {
			queries = append(queries, setName)
		}
		body := len(queries)
		// Each batch carries the attempt's marker (docs/WORKERS.md, "Ending a
		// lost attempt's session"): a comment, so the body runs as written.
		queries = append(queries, marker+run.Text)
		// A COPY FROM STDIN answers with CopyFail and must not find a query
		// waiting behind it: the server would read it as COPY data.
		last := i == len(runs)-1 && !strings.Contains(strings.ToLower(run.Text), "stdin")
		if last {
			queries = append(queries, resetSession)
		}
		out, ioErr := sqlrun.ExchangePostgresCapturing(pg, capture, body, queries...)
		if ctx.Err() != nil {
			// Stopped by its deadline or a cancel: say so, not the server's
			// "canceling statement due to user request".
			return res, labelled(runs, i, context.Cause(ctx))
		}
		if ioErr != nil {
			return res, labelled(runs, i, ioErr)
		}
		res.RowsAffected += out[body].Rows
		if last {
			reset = out[body+1].Err == nil
		}
		if err := out[body].Err; err != nil {
			return res, labelled(runs, i, err)
		}
	}
	return res, nil
}

// resetSession undoes what a body may have changed in its session: settings,
// temporary tables, advisory locks, LISTENs, prepared statements, cursors.
const resetSession = "DISCARD ALL"

// releasePostgres gives the connection back to the pool clean for the next
// body, or closes it when that cannot be done. reset says the pipelined
// DISCARD ALL already succeeded (then the body left no transaction open: the
// server refuses DISCARD ALL inside one). Otherwise a transaction the body left
// open is rolled back and reported (the body's work is gone, so its run must
// not count as a success) before the reset runs here. A body cancelled
// mid-statement closes the connection: a cancel request may still be on its
// way to that backend.
func releasePostgres(ctx context.Context, conn *pgxpool.Conn, reset bool) (leftOpen bool) {
	pg := conn.Conn().PgConn()
	rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if ctx.Err() != nil || pg.IsClosed() {
		_ = conn.Hijack().Close(rctx)
		return false
	}
	if reset {
		conn.Release()
		return false
	}
	leftOpen = pg.TxStatus() != 'I'
	if leftOpen {
		if _, err := pg.Exec(rctx, "ROLLBACK").ReadAll(); err != nil {
			_ = conn.Hijack().Close(rctx)
			return leftOpen
		}
	}
	if _, err := pg.Exec(rctx, resetSession).ReadAll(); err != nil {
		_ = conn.Hijack().Close(rctx)
		return leftOpen
	}
	conn.Release()
	return leftOpen
}
