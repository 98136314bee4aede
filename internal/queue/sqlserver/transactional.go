package sqlserver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/microsoft/go-mssqldb/batch"

	"readpast/internal/queue"
)

// recordTimeout bounds recording a failed transactional attempt, which runs on
// a context detached from the (possibly cancelled) one the body ran under.
const recordTimeout = 30 * time.Second

// RunTransactional runs body on the store's own database and records the
// attempt as succeeded in the same transaction, so the body's effect commits
// exactly once, together with the task's completion.
//
// The body is split into batches on GO lines with go-mssqldb's batch package
// and each batch is sent as it is (no parameters, so CREATE PROCEDURE and the
// like work). The task row is not locked while the body runs, so heartbeats go
// on; the fenced finish at the end takes the lock. If the lease was lost by
// then, everything rolls back and both the result's Err and the returned
// error are queue.ErrLeaseLost.
//
// If the body fails, the transaction rolls back and the failure is recorded as
// an attempt through the Finish path, in a transaction of its own that does
// not depend on ctx still being live: outcome timed_out when ctx's deadline
// passed, failed otherwise (a cancelled ctx cannot say whether an operator or a
// shutdown stopped it, and only failed leaves the decision to the attempt
// budget). The returned FinishResult says what became of the task and the
// error is nil: the body's error is in the attempt's log row. An error is
// returned when the lease was lost or the store could not record the outcome.
//
// The body must leave the transaction as it found it: a body that commits,
// rolls back or leaves a nested transaction open fails the attempt.
func (s *Store) RunTransactional(ctx context.Context, a queue.Attempt, body string) (queue.FinishResult, error) {
	batches := splitBatches(body)
	if len(batches) == 0 {
		return queue.FinishResult{}, &queue.ValidationError{Field: "body", Reason: "is empty: give the SQL the task runs"}
	}
	if a.StartedAt.IsZero() {
		a.StartedAt = time.Now()
	}
	var (
		res     queue.FinishResult
		bodyErr error
	)
	err := retryDeadlock(ctx, func() error {
		var err error
		res, bodyErr, err = s.runTransactionalOnce(ctx, &a, batches)
		return err
	})
	if err != nil {
		return queue.FinishResult{}, wrap(fmt.Sprintf("running transactional task %d", a.TaskID), err)
	}
	if bodyErr == nil {
		// A lost lease rolled the body back; say so as the error too, since
		// nothing the caller asked for happened.
		return res, res.Err
	}

	failed := a // keeps the session id the body ran on
	failed.FinishedAt = time.Now()
	failed.RowsAffected = 0 // rolled back
	failed.Error = bodyErr.Error()
	failed.Outcome = queue.OutcomeFailed
	if ctx.Err() != nil {
		// The statement was stopped by the caller: say why, in its words.
		failed.Error = context.Cause(ctx).Error()
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			failed.Outcome = queue.OutcomeTimedOut
		}
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	res, err = s.finishOne(rctx, failed, modeFinish)
	if err != nil {
		return res, err
	}
	return res, res.Err
}

// runTransactionalOnce runs the body and the fenced finish in one transaction.
// It returns the body's error separately from a store error (including a
// deadlock in the finish, which the caller retries: the rollback undid the body
// too, so running it again keeps the effect exactly-once).
// It fills in a's session id, and for a success its outcome and counts.
func (s *Store) runTransactionalOnce(ctx context.Context, a *queue.Attempt, batches []string) (res queue.FinishResult, bodyErr, storeErr error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return res, nil, err
	}
	defer func() {
		if bodyErr != nil || storeErr != nil || res.Err != nil {
			_ = tx.Rollback()
		}
	}()

	var spid int64
	if err := tx.QueryRowContext(ctx, "SELECT CAST(@@SPID AS bigint);").Scan(&spid); err != nil {
		return res, nil, err
	}
	a.SessionID = fmt.Sprint(spid)

	var affected int64
	for i, b := range batches {
		r, err := tx.ExecContext(ctx, b)
		if err != nil {
			if len(batches) > 1 {
				err = fmt.Errorf("batch %d of %d: %w", i+1, len(batches), err)
			}
			return res, err, nil
		}
		if n, err := r.RowsAffected(); err == nil {
			affected += n
		}
	}
	var trancount int
	if err := tx.QueryRowContext(ctx, "SELECT @@TRANCOUNT;").Scan(&trancount); err != nil {
		return res, err, nil
	}
	if trancount != 1 {
		return res, fmt.Errorf("the body left @@TRANCOUNT at %d: a transactional task must not COMMIT, ROLLBACK or leave a transaction open", trancount), nil
	}

	a.Outcome = queue.OutcomeSucceeded
	a.Error = ""
	a.FinishedAt = time.Now()
	a.RowsAffected = affected
	res, err = runFinish(ctx, tx, finishInTx.text, *a, modeFinish)
	if err != nil {
		return res, nil, err
	}
	if res.Err != nil {
		return res, nil, nil // lease lost: the deferred rollback undoes the body
	}
	if err := tx.Commit(); err != nil {
		return res, nil, err
	}
	return res, nil, nil
}

// splitBatches splits a script on GO lines (sqlcmd's convention, as go-mssqldb's
// batch package reads it: "GO 3" repeats a batch, at most 1000 times) and drops
// empty batches. batch.Split ignores the count on a last line with no line
// break after it, so one is added. internal/target splits the same way.
func splitBatches(body string) []string {
	if !strings.HasSuffix(body, "\n") {
		body += "\n"
	}
	var out []string
	for _, b := range batch.Split(body, "GO") {
		if strings.TrimSpace(b) != "" {
			out = append(out, b)
		}
	}
	return out
}

// compile-time check that *sql.Tx satisfies querier.
var _ querier = (*sql.Tx)(nil)
