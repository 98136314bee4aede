package target

import (
	"context"

	"github.com/jackc/pgx/v5"

	"readpast/internal/sqlrun"
)

// A PostgreSQL body's batches carry the attempt they run for, so that the node
// that reclaims the attempt's expired lease can find and end the session
// (SessionEnder; docs/WORKERS.md, "Ending a lost attempt's session").
//
// The mark is a comment at the head of each batch, "/* readpast task N lease
// M */ ", read back from pg_stat_activity.query: the session's current
// statement while the batch runs, its last one while it waits between
// batches, and the reset's once the body ended. It costs the server nothing
// (the parser skips a comment), where naming the session (SET
// application_name) was a statement of its own on every task, whose new value
// the server also reports to the client twice, when set and when the reset
// puts the session's own name back: 25–40 % of the rate at which the target
// can run a `SELECT 1` body and its reset (docs/benchmarks/drain-idle.md).
//
// pg_stat_activity shows statements only while track_activities is on (the
// default; only a superuser may change it). A target whose sessions have it
// off names the session instead, as before.

// attemptMark is what Run adds for the attempt name: the comment to put at
// the head of every batch, or, on an untracked target, the statement that
// names the session, run in the first batch's round trip. Both are empty when
// the body runs for no attempt.
func (t *postgresTarget) attemptMark(name string) (marker, setName string) {
	switch {
	case name == "":
		return "", ""
	case t.untracked.Load():
		return "", "SET application_name = " + sqlrun.PostgresLiteral(name)
	default:
		return attemptMarker(name), ""
	}
}

// attemptMarker is the comment Run puts at the head of an attempt's batches.
// The name is ReadPast's own (queue.AttemptSessionName: words and numbers), so
// it can never close the comment early.
func attemptMarker(name string) string {
	return "/* " + name + " */ "
}

// checkTracked is the target pool's AfterConnect: it notes a session that
// does not show its statements in pg_stat_activity.
func (t *postgresTarget) checkTracked(ctx context.Context, c *pgx.Conn) error {
	res, err := c.PgConn().Exec(ctx, "SHOW track_activities").ReadAll()
	if err != nil && c.PgConn().IsClosed() {
		return err
	}
	// A server that cannot say counts as one that does not show statements.
	if err != nil || len(res) != 1 || len(res[0].Rows) != 1 || string(res[0].Rows[0][0]) != "on" {
		t.untracked.Store(true)
	}
	return nil
}

// untracker is a target that knows whether its sessions show their
// statements; the node's target set warns once when they do not.
type untracker interface{ untrackedSessions() bool }

func (t *postgresTarget) untrackedSessions() bool { return t.untracked.Load() }
