package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"readpast/internal/queue"
)

// querier is what endAttempts runs on: the pool, or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// endMode says which path ends the attempts.
type endMode int

const (
	modeFinish  endMode = iota // the worker finished the attempt
	modeRelease                // node shutdown: pending again at once
	modeReclaim                // the lease expired: outcome lost
)

// Finish implements queue.Store.
func (s *Store) Finish(ctx context.Context, attempts []queue.Attempt) ([]queue.FinishResult, error) {
	out, err := s.end(ctx, modeFinish, attempts)
	return out, wrap(err, "finishing %d attempts", len(attempts))
}

// Release implements queue.Store.
func (s *Store) Release(ctx context.Context, attempts []queue.Attempt) ([]queue.FinishResult, error) {
	out, err := s.end(ctx, modeRelease, attempts)
	return out, wrap(err, "releasing %d tasks", len(attempts))
}

// ReclaimExpired implements queue.Store. It reads the expired leases, has
// their sessions ended (queue.WithLostSessionEnder), then ends them in one call
// that re-checks each under its row lock (a lease heartbeated or finished in
// between is left alone) and skips tasks being finished right now.
func (s *Store) ReclaimExpired(ctx context.Context, limit int) ([]queue.FinishResult, error) {
	if limit < 1 {
		limit = 100
	}
	rows, err := s.pool.Query(ctx, `SELECT id, lease_token, coalesce(lease_owner, ''), coalesce(session_id, ''),
			started_at, now()
		FROM readpast_tasks WHERE state = 'running' AND lease_expires_at < now()
		ORDER BY lease_expires_at LIMIT $1`, limit)
	if err != nil {
		return nil, wrap(err, "reclaiming expired leases: finding them")
	}
	var lost []queue.Attempt
	for rows.Next() {
		var a queue.Attempt
		var owner string
		// started_at is set by every claim: the lost attempt ran from there.
		if err := rows.Scan(&a.TaskID, &a.Token, &owner, &a.SessionID, &a.StartedAt, &a.FinishedAt); err != nil {
			rows.Close()
			return nil, wrap(err, "reclaiming expired leases: reading them")
		}
		a.Node, a.Worker = queue.SplitOwner(owner)
		a.Outcome, a.Error = queue.OutcomeLost, queue.LostError(owner)
		lost = append(lost, a)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap(err, "reclaiming expired leases: finding them")
	}
	if len(lost) == 0 {
		return nil, nil
	}
	// A lost attempt's body may still run on the target (its node frozen or
	// cut off): the node's ender stops it now, while the task cannot be
	// claimed yet, so it never runs beside the next attempt.
	queue.EndLostSessions(ctx, lost)
	res, err := s.end(ctx, modeReclaim, lost)
	if err != nil {
		return nil, wrap(err, "reclaiming %d expired leases", len(lost))
	}
	// Leases that were renewed, finished or are being finished were not taken.
	out := res[:0]
	for _, r := range res {
		if r.Err == nil {
			out = append(out, r)
		}
	}
	return out, nil
}

// endSQL ends the attempts and, in the same statement, writes the alert
// event of each task that failed for good (docs/ALERTS.md): the insert reads
// the function's answers, so a batch of successes inserts nothing. The task's
// queue and schedule are read as the statement's snapshot has them, which
// ending an attempt does not change.
const endSQL = `WITH ended AS MATERIALIZED (
		SELECT out_ord, out_state, out_retry_at
		FROM readpast_end_attempts($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)),
	events AS (
		INSERT INTO readpast_alert_events (kind, task_id, queue, schedule_name, target, job_name, outcome, attempts, error)
		SELECT 'task_failed', t.id, t.queue, t.schedule_name, t.target,
		       (SELECT r.job_name FROM readpast_job_runs r WHERE r.id = t.run_id),
		       ($5::text[])[e.out_ord], t.attempts, ($6::text[])[e.out_ord]
		FROM ended e JOIN readpast_tasks t ON t.id = ($3::bigint[])[e.out_ord]
		WHERE e.out_state = 'failed')
	SELECT out_ord, out_state, out_retry_at FROM ended`

// releaseUncountedSQL is a release of which some attempts a fault stopped:
// readpast_end_attempts and the give-back of those attempts, in one call.
const releaseUncountedSQL = `SELECT out_ord, out_state, out_retry_at
	FROM readpast_release_uncounted($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`

// releaseUncountedArgs binds readpast_release_uncounted: which attempts are
// given back, then endArgs' arrays without the mode's two flags.
func releaseUncountedArgs(attempts []queue.Attempt, endArgs []any) []any {
	given := make([]bool, len(attempts))
	for i, a := range attempts {
		given[i] = a.Uncounted
	}
	return append([]any{given}, endArgs[2:]...)
}

func anyUncounted(attempts []queue.Attempt) bool {
	for _, a := range attempts {
		if a.Uncounted {
			return true
		}
	}
	return false
}

// end runs endAttempts as a store write (Store.write): one statement, which
// never waits for the node in the middle of its transaction. A release of
// attempts a fault stopped (queue.Attempt.Uncounted) also gives them back to
// their tasks' budgets in that statement (readpast_release_uncounted).
func (s *Store) end(ctx context.Context, mode endMode, attempts []queue.Attempt) ([]queue.FinishResult, error) {
	var out []queue.FinishResult
	err := s.write(ctx, func(ctx context.Context, c conn) error {
		var err error
		out, err = endAttempts(ctx, c, mode, attempts)
		return err
	})
	return out, err
}

// endAttempts ends the attempts in one call of readpast_end_attempts and returns
// one result per attempt, in order; ErrLeaseLost marks a lease that was not
// current. The function answers only for the attempts that ended, each by its
// position in the batch (from 1).
func endAttempts(ctx context.Context, q querier, mode endMode, attempts []queue.Attempt) ([]queue.FinishResult, error) {
	if len(attempts) == 0 {
		return nil, nil
	}
	out := make([]queue.FinishResult, len(attempts))
	ended := make([]bool, len(attempts))
	query, args := endSQL, endArgs(mode, attempts)
	if mode == modeRelease && anyUncounted(attempts) {
		query, args = releaseUncountedSQL, releaseUncountedArgs(attempts, args)
	}
	query, args = withResults(query, args, attempts)
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			ord   int64
			state string
			retry *time.Time
		)
		if err := rows.Scan(&ord, &state, &retry); err != nil {
			return nil, err
		}
		if ord < 1 || ord > int64(len(attempts)) || ended[ord-1] {
			return nil, fmt.Errorf("readpast_end_attempts answered for attempt %d of %d twice or out of range: is the schema newer than this binary?", ord, len(attempts))
		}
		i := ord - 1
		ended[i] = true
		out[i] = queue.FinishResult{TaskID: attempts[i].TaskID, State: queue.State(state), Retry: utc(retry)}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i, a := range attempts {
		if !ended[i] {
			out[i] = queue.FinishResult{TaskID: a.TaskID, Err: fmt.Errorf("task %d: %w", a.TaskID, queue.ErrLeaseLost)}
		}
	}
	return out, nil
}

// endArgs binds readpast_end_attempts' parameters: the mode and one array
// element per attempt.
func endArgs(mode endMode, attempts []queue.Attempt) []any {
	n := len(attempts)
	var (
		ids, tokens, rowsAffected                         = make([]int64, n), make([]int64, n), make([]int64, n)
		outcomes, errs, nodes, workers, sessions, message = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		started, finished                                 = make([]*time.Time, n), make([]*time.Time, n)
	)
	for i, a := range attempts {
		ids[i], tokens[i], rowsAffected[i] = a.TaskID, a.Token, a.RowsAffected
		outcomes[i], errs[i], nodes[i], workers[i], sessions[i], message[i] = string(a.Outcome), a.Error, a.Node, a.Worker, a.SessionID, a.Messages
		started[i], finished[i] = nullTime(a.StartedAt), nullTime(a.FinishedAt)
	}
	return []any{mode == modeRelease, mode == modeReclaim,
		ids, tokens, outcomes, errs, nodes, workers, sessions, started, finished, rowsAffected, message}
}

// heartbeatSQL extends the leases given as parallel arrays of ids and tokens.
// The rows are locked in id order first, as every writer of several task
// rows does (the schema baseline, "Lock order"): an UPDATE .. FROM unnest locks
// in join order, and against a finish of the same tasks that deadlocks. They
// are found by primary key, never the partial index of running tasks (see
// readpast_end_attempts).
const heartbeatSQL = `WITH held AS MATERIALIZED (
			SELECT t.id FROM readpast_tasks t JOIN unnest($1::bigint[], $2::bigint[]) AS l(id, token)
			    ON t.id = l.id AND t.lease_token = l.token
			 WHERE t.state || '' = 'running'
			 ORDER BY t.id FOR UPDATE OF t)
		UPDATE readpast_tasks t
		SET lease_expires_at = now() + $3 * interval '1 microsecond'
		FROM held WHERE t.id = held.id
		RETURNING t.id, t.lease_token, t.cancel_requested`

// Heartbeat implements queue.Store: one statement extends every lease still held.
func (s *Store) Heartbeat(ctx context.Context, leases []queue.Lease, lease time.Duration) (queue.HeartbeatResult, error) {
	var res queue.HeartbeatResult
	if len(leases) == 0 {
		return res, nil
	}
	if lease < time.Millisecond {
		return res, &queue.ValidationError{Field: "lease_duration", Reason: fmt.Sprintf("is %s: a lease must last at least 1ms", lease)}
	}
	ids, tokens := make([]int64, len(leases)), make([]int64, len(leases))
	for i, l := range leases {
		ids[i], tokens[i] = l.TaskID, l.Token
	}
	// Keyed by lease, not task: a stale and a current lease of one task may come
	// in one call.
	held := make(map[queue.Lease]bool, len(leases))
	err := s.write(ctx, func(ctx context.Context, c conn) error {
		rows, err := c.Query(ctx, heartbeatSQL, ids, tokens, lease.Microseconds())
		if err != nil {
			return err
		}
		for rows.Next() {
			var l queue.Lease
			var cancel bool
			if err := rows.Scan(&l.TaskID, &l.Token, &cancel); err != nil {
				rows.Close()
				return err
			}
			held[l] = true
			if cancel {
				res.CancelRequested = append(res.CancelRequested, l.TaskID)
			}
		}
		return rows.Err()
	})
	if err != nil {
		return res, wrap(err, "heartbeating %d leases", len(leases))
	}
	for _, l := range leases {
		if !held[l] {
			res.Lost = append(res.Lost, l.TaskID)
		}
	}
	return res, nil
}

// SetSession implements queue.Store.
func (s *Store) SetSession(ctx context.Context, l queue.Lease, sessionID string) error {
	tag, err := s.execTag(ctx, `UPDATE readpast_tasks SET session_id = $3
		WHERE id = $1 AND lease_token = $2 AND state = 'running'`, l.TaskID, l.Token, sessionID)
	if err != nil {
		return wrap(err, "recording the session of task %d", l.TaskID)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: recording the session of task %d: %w", l.TaskID, queue.ErrLeaseLost)
	}
	return nil
}
