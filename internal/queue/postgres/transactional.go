package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"readpast/internal/queue"
	"readpast/internal/sqlrun"
	"readpast/internal/sqlscript"
)

// RunTransactional implements queue.Store. The body runs on a connection of
// the transactional pool (txpool), whose connections never hold a named
// prepared statement, so each can be reset whole with DISCARD ALL when the
// task ends: nothing the body did to its session (settings, role, temporary
// tables, advisory locks, LISTENs, cursors) reaches the next task.
//
//  1. BEGIN, and the transaction's id (txid_current), in one round trip.
//  2. The body's batches, each a simple query (a batch may hold several
//     statements, as in psql); NOTICEs are gathered; ctx's end sends a cancel
//     request.
//  3. The session is restored for the completion: RESET ROLE, RESET SESSION
//     AUTHORIZATION and RESET ALL (search_path, statement_timeout,
//     lock_timeout, synchronous_commit, session_replication_role and every
//     other setting, SET LOCAL ones too), in the same round trip as the check
//     that the transaction is still the one begun in 1 and may write.
//  4. The completion (readpast_end_attempts, which is pinned to its own
//     schema, so a temporary table named like ours cannot take its writes).
//  5. COMMIT and DISCARD ALL, in one round trip.
//
// Steps 3 to 5 run under queue.Detached once the body has succeeded: a body
// that did its work commits with its completion even if ctx ends meanwhile.
func (s *Store) RunTransactional(ctx context.Context, a queue.Attempt, body string) (queue.TxResult, error) {
	var res queue.TxResult
	runs, err := sqlscript.Runs(body, sqlscript.PostgreSQL)
	if err != nil {
		res.BodyErr = err
		return res, nil
	}
	if len(runs) == 0 {
		return res, &queue.ValidationError{Field: "body", Reason: "is empty: give the SQL the task runs"}
	}
	if a.StartedAt.IsZero() {
		a.StartedAt = time.Now()
	}
	conn, err := s.txpool.Acquire(ctx)
	if err != nil {
		return res, wrap(err, "running transactional task %d: getting a connection", a.TaskID)
	}
	pg := conn.Conn().PgConn()
	res.SessionID = strconv.FormatUint(uint64(pg.PID()), 10)
	clean := false
	defer func() { releaseTxConn(conn, clean) }()

	txid, err := beginTx(ctx, pg)
	if err != nil {
		return res, wrap(err, "running transactional task %d: beginning", a.TaskID)
	}
	msgs := &sqlrun.Messages{}
	stopNotices := s.notices.Listen(pg, msgs)
	res.RowsAffected, res.BodyErr = runBody(ctx, pg, runs)
	stopNotices()
	res.Messages = msgs.String()

	dctx, cancel := queue.Detached(ctx)
	defer cancel()
	if res.BodyErr == nil {
		res.BodyErr = restoreSession(dctx, pg, txid)
	}
	if res.BodyErr != nil {
		res.RowsAffected = 0 // rolled back
		clean = endTx(pg, "ROLLBACK") == nil
		return res, nil
	}

	a.Outcome, a.Error = queue.OutcomeSucceeded, ""
	a.SessionID, a.RowsAffected, a.Messages = res.SessionID, res.RowsAffected, res.Messages
	a.FinishedAt = time.Now()
	out, err := endAttempts(dctx, conn, modeFinish, []queue.Attempt{a})
	if err != nil {
		clean = endTx(pg, "ROLLBACK") == nil
		return res, wrap(err, "running transactional task %d: recording success", a.TaskID)
	}
	if out[0].Err != nil {
		// The lease is gone: the body's effect must not commit.
		clean = endTx(pg, "ROLLBACK") == nil
		return res, fmt.Errorf("postgres: running transactional task %d: %w", a.TaskID, out[0].Err)
	}
	if err := endTx(pg, "COMMIT"); err != nil {
		return res, wrap(err, "running transactional task %d: committing", a.TaskID)
	}
	clean = true
	res.Committed, res.Finish = true, out[0]
	return res, nil
}

// beginTx begins the task's transaction and returns its id.
func beginTx(ctx context.Context, pg *pgconn.PgConn) (string, error) {
	results, err := pg.Exec(ctx, "BEGIN; SELECT txid_current()::text").ReadAll()
	if err != nil {
		return "", err
	}
	return string(results[1].Rows[0][0]), nil
}

// runBody runs the batches in order and stops at the first that fails. A
// cancel request stops a statement when ctx ends.
func runBody(ctx context.Context, pg *pgconn.PgConn, runs []sqlscript.Run) (rows int64, err error) {
	stop := sqlrun.WatchPostgres(ctx, pg)
	defer stop()
	for _, r := range runs {
		out, ioErr := sqlrun.ExchangePostgres(pg, r.Text)
		if ioErr == nil {
			rows += out[0].Rows
			ioErr = out[0].Err
		}
		if ctx.Err() != nil {
			ioErr = context.Cause(ctx)
		}
		if ioErr != nil {
			if len(runs) > 1 {
				ioErr = fmt.Errorf("%s: %w", r.Label, ioErr)
			}
			return rows, ioErr
		}
	}
	return rows, nil
}

// restoreSession brings the session back to what the completion needs and
// checks that the body left the transaction it was given open and writable.
// The error says what the body did.
func restoreSession(ctx context.Context, pg *pgconn.PgConn, txid string) error {
	switch pg.TxStatus() {
	case 'I':
		return errors.New("the body ended the task's transaction (COMMIT or ROLLBACK): a transactional task's body must leave that to ReadPast, which commits it with the completion")
	case 'E':
		return errors.New("the body left its transaction failed (an error it caught, or ignored)")
	}
	results, err := pg.Exec(ctx, `RESET ROLE; RESET SESSION AUTHORIZATION; RESET ALL;
SELECT txid_current()::text, current_setting('transaction_read_only')`).ReadAll()
	if err != nil {
		return fmt.Errorf("restoring the session after the body: %w", err)
	}
	row := results[len(results)-1].Rows[0]
	if got := string(row[0]); got != txid {
		return errors.New("the body committed or rolled back the task's transaction and began another (COMMIT; BEGIN): what it did before that COMMIT is committed without the task's completion")
	}
	if string(row[1]) == "on" {
		return errors.New("the body made the task's transaction read-only (SET TRANSACTION READ ONLY), so its completion cannot be written")
	}
	return nil
}

// endTx ends the transaction with COMMIT or ROLLBACK and resets the session
// (DISCARD ALL) in one round trip. A COMMIT that answers ROLLBACK (the
// transaction had failed) is an error.
func endTx(pg *pgconn.PgConn, verb string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stop := sqlrun.WatchPostgres(ctx, pg)
	defer stop()
	out, err := sqlrun.ExchangePostgres(pg, verb, "DISCARD ALL")
	switch {
	case err != nil:
		return err
	case out[0].Err != nil:
		return out[0].Err
	case out[0].Tag != verb:
		return fmt.Errorf("%s answered %s: the transaction had failed", verb, out[0].Tag)
	}
	return out[1].Err
}

// releaseTxConn returns a connection whose transaction ended and whose session
// was reset to the pool, and closes any other: the server ends its session,
// which rolls back whatever it held.
func releaseTxConn(conn *pgxpool.Conn, clean bool) {
	if clean && conn.Conn().PgConn().TxStatus() == 'I' {
		conn.Release()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = conn.Hijack().Close(ctx)
}
