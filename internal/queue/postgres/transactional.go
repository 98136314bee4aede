package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"readpast/internal/queue"
)

// RunTransactional implements queue.Store: the body's batches (split on GO lines)
// and the fenced completion with its log row commit in one transaction, so the
// body's effect and "succeeded" are recorded exactly once. A lost lease rolls
// the body back (the result's Err and the error are ErrLeaseLost). A failed body
// rolls back and is recorded as a failed attempt (timed_out when ctx's deadline
// passed, cancelled when ctx was cancelled) in a second transaction; that result
// is returned with a nil error.
func (s *Store) RunTransactional(ctx context.Context, a queue.Attempt, body string) (queue.FinishResult, error) {
	res := queue.FinishResult{TaskID: a.TaskID}
	if a.StartedAt.IsZero() {
		a.StartedAt = time.Now()
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return res, wrap(err, "running transactional task %d: getting a connection", a.TaskID)
	}
	defer conn.Release()
	pg := conn.Conn().PgConn()
	messages := s.notices.listen(pg)

	tx, err := conn.Begin(ctx)
	if err != nil {
		messages()
		return res, wrap(err, "running transactional task %d: beginning", a.TaskID)
	}
	rows, bodyErr := runBatches(ctx, pg, queue.SplitGo(body))
	if bodyErr == nil && pg.TxStatus() != 'T' {
		// A COMMIT or ROLLBACK in the body ended the store's transaction: the
		// completion could no longer commit with the body's effect.
		bodyErr = errors.New("the body ended the transaction (COMMIT or ROLLBACK); a transactional task must leave that to ReadPast")
	}
	if bodyErr == nil {
		// The body may have changed search_path or role; the store's own
		// statements in this transaction must run with the session's settings.
		if _, err := pg.Exec(ctx, "RESET ALL").ReadAll(); err != nil {
			bodyErr = fmt.Errorf("restoring the session settings after the body: %w", err)
		}
	}
	a.FinishedAt = time.Now()
	a.Messages = joinMessages(a.Messages, messages())
	if bodyErr != nil {
		s.rollback(conn, "transactional task")
		return s.recordBodyFailure(ctx, a, bodyErr)
	}

	a.Outcome, a.RowsAffected = queue.OutcomeSucceeded, rows
	out, err := endAttempts(ctx, tx, modeFinish, []queue.Attempt{a})
	if err != nil {
		s.rollback(conn, "transactional task")
		return res, wrap(err, "running transactional task %d: recording success", a.TaskID)
	}
	if out[0].Err != nil {
		s.rollback(conn, "transactional task") // the lease is gone: the body's effect must not commit
		return out[0], fmt.Errorf("postgres: running transactional task %d: %w", a.TaskID, out[0].Err)
	}
	if err := tx.Commit(ctx); err != nil {
		return res, wrap(err, "running transactional task %d: committing", a.TaskID)
	}
	s.resetSession(conn.Conn().PgConn())
	return out[0], nil
}

// resetSession undoes what a committed body may have left on the pooled
// connection besides settings (which RESET ALL restored inside the
// transaction): temporary tables, session advisory locks, LISTENs. A rolled-back
// body leaves none of them. If the reset fails the connection is closed, and
// the pool drops it.
func (s *Store) resetSession(pg *pgconn.PgConn) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := pg.Exec(ctx, "SELECT pg_advisory_unlock_all(); UNLISTEN *; DISCARD TEMP").ReadAll()
	if err != nil {
		s.log.Debug("resetting the session after a transactional task failed; closing the connection", "err", err)
		_ = pg.Close(ctx)
	}
}

// runBatches runs each batch with the simple protocol (a batch may hold several
// statements) and adds up the rows every statement reports.
func runBatches(ctx context.Context, pg *pgconn.PgConn, batches []string) (int64, error) {
	var rows int64
	for i, b := range batches {
		results, err := pg.Exec(ctx, b).ReadAll()
		for _, r := range results {
			rows += r.CommandTag.RowsAffected()
		}
		if err != nil {
			if len(batches) > 1 {
				err = fmt.Errorf("batch %d of %d: %w", i+1, len(batches), err)
			}
			return 0, err
		}
	}
	return rows, nil
}

// recordBodyFailure records the failed attempt through the normal finish path.
// It must happen even when ctx is done (a timeout is the usual failure), so it
// runs detached from ctx's cancellation, bounded by its own timeout.
func (s *Store) recordBodyFailure(ctx context.Context, a queue.Attempt, bodyErr error) (queue.FinishResult, error) {
	a.Outcome, a.Error, a.RowsAffected = queue.OutcomeFailed, bodyErr.Error(), 0
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		a.Outcome, a.Error = queue.OutcomeTimedOut, "timed out: "+a.Error
	case errors.Is(ctx.Err(), context.Canceled):
		a.Outcome, a.Error = queue.OutcomeCancelled, "cancelled: "+a.Error
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	out, err := endAttempts(rctx, s.pool, modeFinish, []queue.Attempt{a})
	if err != nil {
		return queue.FinishResult{TaskID: a.TaskID}, wrap(err, "running transactional task %d: recording its failure (%v)", a.TaskID, bodyErr)
	}
	if out[0].Err != nil {
		return out[0], fmt.Errorf("postgres: running transactional task %d: %w", a.TaskID, out[0].Err)
	}
	return out[0], nil
}

func joinMessages(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n" + b
}

// rollback ends a failed transaction on conn, even when the caller's context is
// done; if it cannot, the pool discards the connection on release, which ends
// the transaction on the server too.
func (s *Store) rollback(conn *pgxpool.Conn, what string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := conn.Exec(ctx, "ROLLBACK"); err != nil {
		s.log.Debug("rollback failed; the connection is discarded", "of", what, "err", err)
	}
}
