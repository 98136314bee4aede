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
	"readpast/internal/resultset"
	"readpast/internal/sqlrun"
	"readpast/internal/sqlscript"
)

// RunTransactional implements queue.Store. The body runs on a connection of
// the transactional pool (txpool), whose connections never hold a named
// prepared statement, so each can be reset whole with DISCARD ALL when the
// task ends: nothing the body did to its session (settings, role, temporary
// tables, advisory locks, LISTENs, cursors) reaches the next task.
//
//  1. The session named after the attempt (queue.AttemptSessionName), BEGIN,
//     and the transaction's id (txid_current), in one round trip.
//  2. The body's batches, each a simple query (a batch may hold several
//     statements, as in psql); NOTICEs are gathered; ctx's end sends a cancel
//     request.
//  3. The session is restored for the completion: RESET ROLE, RESET SESSION
//     AUTHORIZATION and RESET ALL (search_path, statement_timeout,
//     lock_timeout, synchronous_commit, session_replication_role and every
//     other setting, SET LOCAL ones too), in the same round trip as the check
//     that the transaction is still the one begun in 1 and may write.
//  4. readpast_mark_committed (pinned to its own schema, so a temporary
//     table named like ours cannot take its write), COMMIT and DISCARD ALL,
//     in one round trip: the mark locks the task's own row and nothing else,
//     so a node that stalls here blocks no other task's end
//     (queue.TxResult, docs/RELIABILITY.md "A stalled node").
//
// Steps 3 and 4 run under queue.Detached once the body has succeeded: a body
// that did its work commits even if ctx ends meanwhile. The attempt's end is
// recorded after, by the caller's ordinary finish.
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

	name := queue.AttemptSessionName(a.Lease)
	txid, err := beginTx(ctx, pg, name)
	if err != nil {
		return res, wrap(err, "running transactional task %d: beginning", a.TaskID)
	}
	msgs := &sqlrun.Messages{}
	stopNotices := s.notices.Listen(pg, msgs)
	capture := resultset.FromContext(ctx)
	res.RowsAffected, res.BodyErr = runBody(ctx, pg, runs, capture)
	stopNotices()
	res.Messages, res.Results = msgs.String(), capture.Encoded()

	dctx, cancel := queue.Detached(ctx)
	defer cancel()
	if res.BodyErr == nil {
		res.BodyErr = restoreSession(dctx, pg, txid, name)
	}
	if res.BodyErr != nil {
		res.RowsAffected = 0 // rolled back
		clean = endTx(pg, "ROLLBACK") == nil
		return res, nil
	}

	switch err := commitMarked(pg, a); {
	case isLeaseLost(err):
		clean = endTx(pg, "ROLLBACK") == nil
		return res, fmt.Errorf("postgres: running transactional task %d: %w", a.TaskID, queue.ErrLeaseLost)
	case err != nil:
		return res, wrap(err, "running transactional task %d: committing", a.TaskID)
	}
	clean = true
	res.Committed = true
	return res, nil
}

// commitMarked marks the body committed on the task's own row
// (readpast_mark_committed, which fails when the lease is not current), then
// commits and resets the session, in one round trip. A failed mark leaves
// the transaction failed, so the COMMIT sent with it rolls the body back
// (PostgreSQL answers it ROLLBACK). The transaction never holds a row that
// another task's end takes: the end is recorded after, by an ordinary finish.
func commitMarked(pg *pgconn.PgConn, a queue.Attempt) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stop := sqlrun.WatchPostgres(ctx, pg)
	defer stop()
	out, err := sqlrun.ExchangePostgres(pg,
		fmt.Sprintf("SELECT readpast_mark_committed(%d, %d)", a.TaskID, a.Token), "COMMIT", "DISCARD ALL")
	switch {
	case err != nil:
		return err
	case out[0].Err != nil:
		return out[0].Err
	case out[1].Err != nil:
		return out[1].Err
	case out[1].Tag != "COMMIT":
		return fmt.Errorf("COMMIT answered %s: the transaction had failed", out[1].Tag)
	}
	return out[2].Err
}

// isLeaseLost reports whether err is readpast_mark_committed's refusal.
func isLeaseLost(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "RP001"
}

// beginTx names the session after the attempt (queue.AttemptSessionName: the
// reclaim of an expired lease ends the session by it), begins the task's
// transaction and returns its id. DISCARD ALL at the end gives the session
// its own name back.
func beginTx(ctx context.Context, pg *pgconn.PgConn, name string) (string, error) {
	results, err := pg.Exec(ctx, setSessionName(name)+"; BEGIN; SELECT txid_current()::text").ReadAll()
	if err != nil {
		return "", err
	}
	return string(results[2].Rows[0][0]), nil
}

// setSessionName is the statement that names the session; name is ReadPast's
// own (digits and words), never a body's text.
func setSessionName(name string) string {
	return "SET application_name = '" + name + "'"
}

// runBody runs the batches in order and stops at the first that fails. A
// cancel request stops a statement when ctx ends.
func runBody(ctx context.Context, pg *pgconn.PgConn, runs []sqlscript.Run, capture *resultset.Capture) (rows int64, err error) {
	stop := sqlrun.WatchPostgres(ctx, pg)
	defer stop()
	for _, r := range runs {
		out, ioErr := sqlrun.ExchangePostgresCapturing(pg, capture, 0, r.Text)
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
func restoreSession(ctx context.Context, pg *pgconn.PgConn, txid, name string) error {
	switch pg.TxStatus() {
	case 'I':
		return errors.New("the body ended the task's transaction (COMMIT or ROLLBACK): a transactional task's body must leave that to ReadPast, which commits it with the completion")
	case 'E':
		return errors.New("the body left its transaction failed (an error it caught, or ignored)")
	}
	// RESET ALL drops the attempt's session name too: it is set again, so a
	// node that stalls before its COMMIT leaves a session the reclaim finds.
	results, err := pg.Exec(ctx, `RESET ROLE; RESET SESSION AUTHORIZATION; RESET ALL; `+setSessionName(name)+`;
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
