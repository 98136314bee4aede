package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"readpast/internal/queue"
)

// Finish implements queue.Store.
func (s *Store) Finish(ctx context.Context, attempts []queue.Attempt) ([]queue.FinishResult, error) {
	return s.endAll(ctx, "finishing attempts", attempts, false)
}

// Release implements queue.Store.
func (s *Store) Release(ctx context.Context, attempts []queue.Attempt) ([]queue.FinishResult, error) {
	return s.endAll(ctx, "releasing tasks", attempts, true)
}

func (s *Store) endAll(ctx context.Context, what string, attempts []queue.Attempt, release bool) ([]queue.FinishResult, error) {
	var out []queue.FinishResult
	err := s.write(ctx, what, func(ctx context.Context, tx *sql.Tx, now int64) error {
		var err error
		out, err = endAllTx(tx, now, attempts, release)
		return err
	})
	return out, err
}

// endAllTx ends attempts inside the caller's write transaction.
func endAllTx(tx *sql.Tx, now int64, attempts []queue.Attempt, release bool) ([]queue.FinishResult, error) {
	out := make([]queue.FinishResult, len(attempts))
	ptx := prepared(tx)
	for i, a := range attempts {
		r, err := endAttempt(ptx, now, a, release)
		if err != nil {
			return nil, err
		}
		out[i] = r
	}
	return out, nil
}

// endAttempt moves one held task on and writes its execution-log row. A lease
// that is not current gives a result with ErrLeaseLost and changes nothing.
func endAttempt(tx *preparedTx, now int64, a queue.Attempt, release bool) (queue.FinishResult, error) {
	res := queue.FinishResult{TaskID: a.TaskID}
	var (
		q                                  string
		group, chain                       sql.NullString
		stage, attempts, retryBase, maxAtt int
		cancelRequested                    bool
		runID, runStep, retryMS, capMS     sql.NullInt64
		qRetryMS, qCapMS                   sql.NullInt64
	)
	err := tx.QueryRow(`SELECT t.queue, t.group_name, t.chain, t.stage, t.attempts, t.retry_base, t.max_attempts, t.cancel_requested,
		t.run_id, t.run_step, t.retry_interval_ms, t.retry_cap_ms, q.retry_interval_ms, q.retry_cap_ms
		FROM readpast_tasks t LEFT JOIN readpast_queues q ON q.name = t.queue
		WHERE t.id = ? AND t.lease_token = ? AND t.state = 'running'`, a.TaskID, a.Token).
		Scan(&q, &group, &chain, &stage, &attempts, &retryBase, &maxAtt, &cancelRequested, &runID, &runStep, &retryMS, &capMS,
			&qRetryMS, &qCapMS)
	if errors.Is(err, sql.ErrNoRows) {
		res.Err = fmt.Errorf("task %d: %w", a.TaskID, queue.ErrLeaseLost)
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("reading task %d: %w", a.TaskID, err)
	}
	next, retryIn := queue.AfterAttempt(a.Outcome, attempts, retryBase, maxAtt, release, cancelRequested)
	if next == queue.StatePending && !release {
		retryIn = queue.RetryWait(attempts-retryBase, retryIn, queue.RetryOf(int64Ptr(retryMS), int64Ptr(capMS)),
			queue.RetryOf(int64Ptr(qRetryMS), int64Ptr(qCapMS)))
	}
	res.State = next
	var finished sql.NullInt64
	available := sql.NullInt64{}
	if next == queue.StatePending {
		res.Retry = fromMicros(now + retryIn.Microseconds())
		available = sql.NullInt64{Int64: now + retryIn.Microseconds(), Valid: true}
	} else {
		finished = sql.NullInt64{Int64: now, Valid: true}
	}
	delayed := next == queue.StatePending && retryIn > 0 // a back-off: out of the claim's way until due
	lastErr := nullString(a.Error)
	givenBack := boolInt(release && a.Uncounted) // a fault's attempt goes back to the budget (Attempt.Uncounted)
	_, err = tx.Exec(`UPDATE readpast_tasks
		SET state = ?, available_at = COALESCE(?, available_at), delayed = ?, finished_at = ?,
		    last_error = CASE WHEN ? THEN NULL ELSE COALESCE(?, last_error) END,
		    lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL, cancel_requested = 0,
		    retry_base = retry_base + ?
		WHERE id = ?`, next, available, boolInt(delayed), finished,
		boolInt(next == queue.StateSucceeded), lastErr, givenBack, a.TaskID) // a success clears an earlier attempt's error
	if err != nil {
		return res, fmt.Errorf("updating task %d: %w", a.TaskID, err)
	}
	if group.Valid {
		if _, err := tx.Exec(`UPDATE readpast_groups SET running = max(running - 1, 0) WHERE name = ?`, group.String); err != nil {
			return res, fmt.Errorf("counting group %s: %w", group.String, err)
		}
	}
	if err := countFinished(tx, q, next, 1); err != nil {
		return res, err
	}
	if err := logAttempt(tx, now, a, attempts, q); err != nil {
		return res, err
	}
	if next == queue.StateFailed {
		if err := writeAlertEvent(tx.Tx, now, a); err != nil {
			return res, err
		}
	}
	if chain.Valid && next.Finished() {
		if err := chainEnded(tx.Tx, now, chain.String, a.TaskID, stage, next); err != nil {
			return res, err
		}
	}
	if runID.Valid && next.Finished() {
		if err := stepEnded(tx.Tx, now, runID.Int64, int(runStep.Int64), a.TaskID, next); err != nil {
			return res, err
		}
	}
	return res, nil
}

// logAttempt writes the attempt's execution-log row. An attempt without a
// finish time ends now, one without a start time started when it ended: a row
// never holds the zero time (the year 1), which retention would purge at once.
func logAttempt(tx execer, now int64, a queue.Attempt, attempt int, q string) error {
	started, finished := micros(a.StartedAt), micros(a.FinishedAt)
	if a.FinishedAt.IsZero() {
		finished = now
	}
	if a.StartedAt.IsZero() {
		started = finished
	}
	_, err := tx.Exec(`INSERT INTO readpast_attempts
		(task_id, attempt, queue, node, worker, session_id, started_at, finished_at, duration_ms,
		 outcome, error, rows_affected, messages)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		a.TaskID, attempt, q, a.Node, a.Worker, a.SessionID, started, finished, (finished-started)/1000,
		a.Outcome, a.Error, a.RowsAffected, a.Messages)
	if err != nil {
		return fmt.Errorf("writing execution log of task %d: %w", a.TaskID, err)
	}
	if err := keepResults(tx, a, attempt); err != nil {
		return err
	}
	return countAttempt(tx, q, a.Outcome, finished, (finished-started)/1000)
}

// ReclaimExpired implements queue.Store.
func (s *Store) ReclaimExpired(ctx context.Context, limit int) ([]queue.FinishResult, error) {
	if limit < 1 {
		limit = 100
	}
	var out []queue.FinishResult
	err := s.write(ctx, "reclaiming expired leases", func(ctx context.Context, tx *sql.Tx, now int64) error {
		rows, err := tx.Query(`SELECT id, lease_token, lease_owner, started_at, session_id FROM readpast_tasks
			WHERE state = 'running' AND lease_expires_at < ? ORDER BY lease_expires_at LIMIT ?`, now, limit)
		if err != nil {
			return err
		}
		var lost []queue.Attempt
		for rows.Next() {
			var a queue.Attempt
			var owner, session sql.NullString
			var started sql.NullInt64
			if err := rows.Scan(&a.TaskID, &a.Token, &owner, &started, &session); err != nil {
				rows.Close()
				return err
			}
			a.Node, a.Worker = queue.SplitOwner(owner.String)
			a.SessionID = session.String
			a.StartedAt, a.FinishedAt = nullMicros(started), fromMicros(now)
			a.Outcome, a.Error = queue.OutcomeLost, queue.LostError(owner.String)
			lost = append(lost, a)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		ptx := prepared(tx)
		for _, a := range lost {
			r, err := endAttempt(ptx, now, a, false)
			if err != nil {
				return err
			}
			out = append(out, r)
		}
		return nil
	})
	return out, err
}
