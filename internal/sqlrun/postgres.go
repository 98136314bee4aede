package sqlrun

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgproto3"

	"readpast/internal/resultset"
)

// NoticeRouter hands the NOTICE / WARNING messages a PostgreSQL connection
// receives to the Messages of whoever runs a body on it now: pgx reports
// notices per connection (ConnConfig.OnNotice), not per statement.
type NoticeRouter struct {
	sinks sync.Map // *pgconn.PgConn → *Messages
}

// Handle is the pool's OnNotice callback.
func (r *NoticeRouter) Handle(c *pgconn.PgConn, n *pgconn.Notice) {
	if m, ok := r.sinks.Load(c); ok {
		m.(*Messages).Add(n.Severity + ": " + n.Message)
	}
}

// Listen routes c's notices into m until the returned func is called.
func (r *NoticeRouter) Listen(c *pgconn.PgConn, m *Messages) (stop func()) {
	r.sinks.Store(c, m)
	return func() { r.sinks.Delete(c) }
}

// QueryOutcome is what one simple query returned.
type QueryOutcome struct {
	Rows int64  // rows affected, summed over its statements
	Tag  string // the command tag of its last statement, e.g. "COMMIT"
	Err  error  // the first error the server reported, if any
}

// ExchangePostgres writes the queries in one go (simple query protocol,
// pipelined: one round trip) and reads until the last one is done. A query
// may hold several statements, as in psql. Result rows are read and dropped,
// never held. The error is set only when the connection itself failed; the
// caller's context watcher (pgconn's, or its own) covers the exchange.
//
// A COPY FROM STDIN is answered with CopyFail: a task has no client to
// stream rows from, so the server ends the COPY with that as its error.
func ExchangePostgres(pg *pgconn.PgConn, queries ...string) ([]QueryOutcome, error) {
	return ExchangePostgresCapturing(pg, nil, 0, queries...)
}

// ExchangePostgresCapturing is ExchangePostgres that keeps the rows of the
// result sets of queries[at] in capture as far as its limits go
// (resultset.Capture; nil keeps nothing). Every row is read either way, as
// the protocol has it: capturing changes nothing the server does.
func ExchangePostgresCapturing(pg *pgconn.PgConn, capture *resultset.Capture, at int, queries ...string) ([]QueryOutcome, error) {
	fe := pg.Frontend()
	var set *pgResultSet // the result set of queries[at] being captured
	for _, q := range queries {
		fe.SendQuery(&pgproto3.Query{String: q})
	}
	if err := fe.Flush(); err != nil {
		return nil, err
	}
	out := make([]QueryOutcome, len(queries))
	for i := 0; i < len(queries); {
		msg, err := pg.ReceiveMessage(context.Background())
		if err != nil {
			return out, err
		}
		switch m := msg.(type) {
		case *pgproto3.CommandComplete:
			tag := pgconn.NewCommandTag(string(m.CommandTag))
			out[i].Rows += tag.RowsAffected()
			out[i].Tag = tag.String()
		case *pgproto3.ErrorResponse:
			if out[i].Err == nil {
				out[i].Err = pgconn.ErrorResponseToPgError(m)
			}
		case *pgproto3.CopyInResponse:
			fe.Send(&pgproto3.CopyFail{Message: "COPY FROM STDIN is not available to a task body: use COPY FROM a server file or INSERT"})
			if err := fe.Flush(); err != nil {
				return out, err
			}
		case *pgproto3.ReadyForQuery:
			i++
		case *pgproto3.RowDescription:
			set = nil
			if i == at && capture.Wants() {
				set = beginPgSet(m, capture)
			}
		case *pgproto3.DataRow:
			if set != nil && !set.row(m, capture) {
				set = nil
			}
		}
	}
	return out, nil
}

// WatchPostgres sends a cancel request for pg's running statement when ctx
// ends, and gives the socket two more seconds before its deadline breaks a
// read that still waits (closing the socket alone leaves pg_sleep running).
// Call the returned func when the exchange is over.
func WatchPostgres(ctx context.Context, pg *pgconn.PgConn) (stop func()) {
	w := ctxwatch.NewContextWatcher(&pgconn.CancelRequestContextWatcherHandler{Conn: pg, DeadlineDelay: 2 * time.Second})
	w.Watch(ctx)
	return w.Unwatch
}

// PostgresLiteral quotes s as a PostgreSQL string literal (standard
// conforming strings, the default since 9.1: a quote is doubled, nothing
// else is special).
func PostgresLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
