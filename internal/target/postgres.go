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
	"github.com/jackc/pgx/v5/pgproto3"
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
// a batch may hold several statements, as in psql. The session reset that
// makes the connection clean for the next body (DISCARD ALL) is written
// together with the last batch, so a one-batch body costs one round trip
// (docs/BENCHMARKS.md: the separate reset cost a tenth of the throughput).
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
	// On cancel or timeout a cancel request stops the statement on the server;
	// two seconds later the socket deadline breaks a read that still waits.
	watch := ctxwatch.NewContextWatcher(&pgconn.CancelRequestContextWatcherHandler{Conn: pg, DeadlineDelay: 2 * time.Second})
	watch.Watch(ctx)
	reset := false // whether DISCARD ALL ran and succeeded
	defer func() {
		watch.Unwatch()
		t.collectors.Delete(pg)
		res.Messages = msgs.String()
		if leftOpen := releasePostgres(ctx, conn, reset); leftOpen && err == nil {
			err = errOpenTransaction
		}
	}()
	batches := queue.SplitGo(body)
	for i, batch := range batches {
		queries := []string{batch}
		// A COPY FROM STDIN answers with CopyFail and must not find a query
		// waiting behind it: the server would read it as COPY data.
		last := i == len(batches)-1 && !strings.Contains(strings.ToLower(batch), "stdin")
		if last {
			queries = append(queries, resetSession)
		}
		out, ioErr := exchange(pg, queries...)
		if ioErr != nil {
			if ctx.Err() != nil {
				return res, fmt.Errorf("batch %d: %w", i+1, context.Cause(ctx))
			}
			return res, fmt.Errorf("batch %d: %w", i+1, ioErr)
		}
		res.RowsAffected += out[0].rows
		if last {
			reset = out[1].err == nil
		}
		if err := out[0].err; err != nil {
			return res, fmt.Errorf("batch %d: %w", i+1, err)
		}
	}
	return res, nil
}

// resetSession undoes what a body may have changed in its session: settings,
// temporary tables, advisory locks, LISTENs, prepared statements, cursors.
const resetSession = "DISCARD ALL"

// queryOutcome is what one simple query returned.
type queryOutcome struct {
	rows int64 // rows affected, summed over its statements
	err  error // the first error the server reported, if any
}

// exchange writes the queries in one go (simple query protocol, pipelined) and
// reads until the last one is done. Result rows are read and dropped, never
// held. The error is set only when the connection itself failed.
func exchange(pg *pgconn.PgConn, queries ...string) ([]queryOutcome, error) {
	fe := pg.Frontend()
	for _, q := range queries {
		fe.SendQuery(&pgproto3.Query{String: q})
	}
	if err := fe.Flush(); err != nil {
		return nil, err
	}
	out := make([]queryOutcome, len(queries))
	for i := 0; i < len(queries); {
		msg, err := pg.ReceiveMessage(context.Background()) // Run's watcher covers the whole exchange
		if err != nil {
			return out, err
		}
		switch m := msg.(type) {
		case *pgproto3.CommandComplete:
			out[i].rows += pgconn.NewCommandTag(string(m.CommandTag)).RowsAffected()
		case *pgproto3.ErrorResponse:
			if out[i].err == nil {
				out[i].err = pgconn.ErrorResponseToPgError(m)
			}
		case *pgproto3.CopyInResponse:
			// A task has no client to stream rows from; the server ends the COPY
			// with this as its error.
			fe.Send(&pgproto3.CopyFail{Message: "COPY FROM STDIN is not available to a task body: use COPY FROM a server file or INSERT"})
			if err := fe.Flush(); err != nil {
				return out, err
			}
		case *pgproto3.ReadyForQuery:
			i++
		}
	}
	return out, nil
}

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
