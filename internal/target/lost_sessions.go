package target

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"readpast/internal/sqlrun"
)

// SessionEnder is a target that can end the sessions of attempts whose
// leases expired: a node frozen (SIGSTOP, a paused VM) or cut off from its
// database runs nothing, its fence included, so the body it sent runs on in
// the server and would run beside the next attempt of its task.
type SessionEnder interface {
	// EndSessions ends every session of the target's database that carries
	// one of names (given by WithSessionName while a body runs: the mark at
	// the head of its batches, or its session's name) and waits until
	// they are gone or ctx ends; it returns how many it ended. Only sessions
	// named so are touched: ReadPast alone gives those names, each to one
	// attempt.
	EndSessions(ctx context.Context, names []string) (int, error)
}

var _ SessionEnder = (*postgresTarget)(nil)

// EndSessions implements SessionEnder with pg_terminate_backend, which the
// role ReadPast logs in as may call on its own sessions. A transactional
// body's session rolls back. It runs in the simple query protocol, as bodies
// do, so the connection's statement cache is never out of step with a
// DISCARD ALL.
func (t *postgresTarget) EndSessions(ctx context.Context, names []string) (int, error) {
	if len(names) == 0 {
		return 0, nil
	}
	conn, err := t.pool.Acquire(ctx)
	if err != nil {
		return 0, fmt.Errorf("connecting to the target to end lost sessions: %w", err)
	}
	defer conn.Release()
	pg := conn.Conn().PgConn()
	stop := sqlrun.WatchPostgres(ctx, pg)
	defer stop()
	quoted, marked := make([]string, len(names)), make([]string, len(names))
	for i, n := range names {
		m := attemptMarker(n)
		quoted[i] = sqlrun.PostgresLiteral(n)
		marked[i] = "left(query, " + strconv.Itoa(len(m)) + ") = " + sqlrun.PostgresLiteral(m)
	}
	// A body's session is found by the marker at the head of its batch (its
	// current or last statement) or, on a target that does not show
	// statements and on a transactional body's store session, by its name
	// (attempt_mark.go). pg_terminate_backend in the select list runs only for
	// the rows the WHERE kept; in a WHERE (or a CTE the planner folds in) it
	// could run on any session of the server before the name is checked.
	res, err := pg.Exec(ctx, `SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid()
		AND (application_name IN (`+strings.Join(quoted, ", ")+`) OR `+strings.Join(marked, " OR ")+`)`).ReadAll()
	if err != nil {
		return 0, fmt.Errorf("ending lost sessions on the target: %w", err)
	}
	var pids []string
	for _, r := range res {
		for _, row := range r.Rows {
			if string(row[1]) == "t" {
				pids = append(pids, string(row[0]))
			}
		}
	}
	if len(pids) == 0 {
		return 0, nil
	}
	// pg_terminate_backend only signals: wait until the sessions are gone, so
	// the caller knows the bodies stopped before it hands their tasks on.
	for {
		res, err := pg.Exec(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid IN ("+strings.Join(pids, ", ")+")").ReadAll()
		if err != nil {
			return len(pids), fmt.Errorf("waiting for the lost sessions to end on the target: %w", err)
		}
		if n, _ := strconv.Atoi(string(res[0].Rows[0][0])); n == 0 {
			return len(pids), nil
		}
		select {
		case <-ctx.Done():
			return len(pids), errors.New("the lost sessions on the target had not ended in time")
		case <-time.After(10 * time.Millisecond):
		}
	}
}
