package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"readpast/internal/queue"
)

// Heartbeat implements queue.Store.
func (s *Store) Heartbeat(ctx context.Context, leases []queue.Lease, lease time.Duration) (queue.HeartbeatResult, error) {
	var out queue.HeartbeatResult
	err := s.write(ctx, "heartbeating leases", func(ctx context.Context, tx *sql.Tx, now int64) error {
		for _, l := range leases {
			var cancel bool
			err := tx.QueryRow(`UPDATE readpast_tasks SET lease_expires_at = ?
				WHERE id = ? AND lease_token = ? AND state = 'running' RETURNING cancel_requested`,
				now+lease.Microseconds(), l.TaskID, l.Token).Scan(&cancel)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				out.Lost = append(out.Lost, l.TaskID)
			case err != nil:
				return err
			case cancel:
				out.CancelRequested = append(out.CancelRequested, l.TaskID)
			}
		}
		return nil
	})
	return out, err
}

// SetSession implements queue.Store.
func (s *Store) SetSession(ctx context.Context, l queue.Lease, sessionID string) error {
	return s.write(ctx, fmt.Sprintf("recording session of task %d", l.TaskID), func(ctx context.Context, tx *sql.Tx, _ int64) error {
		r, err := tx.Exec(`UPDATE readpast_tasks SET session_id = ? WHERE id = ? AND lease_token = ? AND state = 'running'`,
			sessionID, l.TaskID, l.Token)
		if err != nil {
			return err
		}
		if n, _ := r.RowsAffected(); n == 0 {
			return queue.ErrLeaseLost
		}
		return nil
	})
}

// Cancel implements queue.Store.
func (s *Store) Cancel(ctx context.Context, id int64, actor string) (queue.State, error) {
	var st queue.State
	err := s.write(ctx, fmt.Sprintf("cancelling task %d", id), func(ctx context.Context, tx *sql.Tx, now int64) error {
		var err error
		st, err = s.cancelTx(tx, now, id, actor)
		return err
	})
	return st, err
}

// cancelTx is Cancel inside the caller's write transaction.
func (s *Store) cancelTx(tx *sql.Tx, now int64, id int64, actor string) (queue.State, error) {
	var st queue.State
	var chain sql.NullString
	var stage int
	var runID, runStep sql.NullInt64
	err := tx.QueryRow(`SELECT state, chain, stage, run_id, run_step FROM readpast_tasks WHERE id = ?`, id).
		Scan(&st, &chain, &stage, &runID, &runStep)
	if errors.Is(err, sql.ErrNoRows) {
		return "", queue.ErrNotFound
	}
	if err != nil {
		return "", err
	}
	switch st {
	case queue.StateRunning:
		if _, err := tx.Exec(`UPDATE readpast_tasks SET cancel_requested = 1, finished_by = ? WHERE id = ?`, actor, id); err != nil {
			return "", err
		}
	case queue.StatePending:
		st = queue.StateCancelled
		var q string
		err := tx.QueryRow(`UPDATE readpast_tasks SET state = 'cancelled', finished_at = ?, finished_by = ?,
			last_error = ?, chain_wait = 0 WHERE id = ? RETURNING queue`, now, actor, "cancelled by "+actor, id).Scan(&q)
		if err != nil {
			return "", err
		}
		if err := countFinished(tx, q, st, 1); err != nil {
			return "", err
		}
		if chain.Valid {
			if err := chainEnded(tx, now, chain.String, id, stage, st); err != nil {
				return "", err
			}
		}
		if runID.Valid {
			if err := stepEnded(tx, now, runID.Int64, int(runStep.Int64), id, st); err != nil {
				return "", err
			}
		}
	default:
		return st, fmt.Errorf("%w: task %d is %s; only pending or running tasks can be cancelled", queue.ErrInvalidState, id, st)
	}
	return st, s.audit(tx, now, actor, "cancel", taskTarget(id), string(st))
}

// Retry implements queue.Store.
func (s *Store) Retry(ctx context.Context, id int64, actor string) error {
	return s.write(ctx, fmt.Sprintf("retrying task %d", id), func(ctx context.Context, tx *sql.Tx, now int64) error {
		return s.retryTx(tx, now, id, actor)
	})
}

// retryTx is Retry inside the caller's write transaction.
func (s *Store) retryTx(tx *sql.Tx, now int64, id int64, actor string) error {
	var st queue.State
	var chain sql.NullString
	var stage int
	var q string
	var runID, runStep sql.NullInt64
	err := tx.QueryRow(`SELECT state, chain, stage, queue, run_id, run_step FROM readpast_tasks WHERE id = ?`, id).
		Scan(&st, &chain, &stage, &q, &runID, &runStep)
	if errors.Is(err, sql.ErrNoRows) {
		return queue.ErrNotFound
	}
	if err != nil {
		return err
	}
	if st != queue.StateFailed && st != queue.StateCancelled {
		return fmt.Errorf("%w: task %d is %s; only failed or cancelled tasks can be retried", queue.ErrInvalidState, id, st)
	}
	_, err = tx.Exec(`UPDATE readpast_tasks SET state = 'pending', available_at = ?, delayed = 0, retry_base = attempts,
		finished_at = NULL, finished_by = NULL, cancel_requested = 0, chain_cancelled = 0 WHERE id = ?`, now, id)
	if isUniqueViolation(err) {
		return fmt.Errorf("%w: another unfinished task of queue %s has the unique key of task %d", queue.ErrInvalidState, q, id)
	}
	if err != nil {
		return err
	}
	if err := countFinished(tx, q, st, -1); err != nil {
		return err
	}
	if runID.Valid {
		if err := reopenStepCount(tx, id, runID.Int64, int(runStep.Int64)); err != nil {
			return err
		}
	}
	if chain.Valid {
		reopened, err := queryStrings(tx, `UPDATE readpast_tasks SET state = 'pending', chain_cancelled = 0, finished_at = NULL
			WHERE chain = ? AND state = 'cancelled' AND chain_cancelled = 1 AND stage > ? RETURNING queue`, chain.String, stage)
		if isUniqueViolation(err) {
			return fmt.Errorf("%w: a task of chain %s that the retry would reopen has the unique key of an unfinished task", queue.ErrInvalidState, chain.String)
		}
		if err != nil {
			return fmt.Errorf("reopening chain %s: %w", chain.String, err)
		}
		for _, rq := range reopened {
			if err := countFinished(tx, rq, queue.StateCancelled, -1); err != nil {
				return err
			}
		}
		if err := refreshChain(tx, chain.String); err != nil {
			return err
		}
	}
	return s.audit(tx, now, actor, "retry", taskTarget(id), "")
}

// UpdateQueue implements queue.Store.
func (s *Store) UpdateQueue(ctx context.Context, name string, u queue.QueueUpdate) (*queue.Queue, error) {
	err := s.write(ctx, "updating queue "+name, func(ctx context.Context, tx *sql.Tx, now int64) error {
		if _, err := tx.Exec(`INSERT INTO readpast_queues (name, updated_at) VALUES (?, ?) ON CONFLICT DO NOTHING`, name, now); err != nil {
			return err
		}
		var paused sql.NullInt64
		if u.Paused != nil {
			paused = sql.NullInt64{Int64: int64(boolInt(*u.Paused)), Valid: true}
		}
		interval, capMS := queue.RetryMillis(u.Retry)
		_, err := tx.Exec(`UPDATE readpast_queues SET
			workers = COALESCE(?, workers),
			max_running = CASE WHEN ? THEN NULL ELSE COALESCE(?, max_running) END,
			paused = COALESCE(?, paused), default_target = COALESCE(?, default_target), updated_at = ?, updated_by = ?,
			retry_interval_ms = CASE WHEN ? THEN NULL WHEN ? THEN ? ELSE retry_interval_ms END,
			retry_cap_ms = CASE WHEN ? THEN NULL WHEN ? THEN ? ELSE retry_cap_ms END,
			result_rows = COALESCE(?, result_rows)
			WHERE name = ?`, intOrNull(u.Workers), u.ClearMaxRunning, intOrNull(u.MaxRunning), paused, stringOrNull(u.DefaultTarget), now, u.Actor,
			u.ClearRetry, u.Retry != nil, interval, u.ClearRetry, u.Retry != nil, capMS, intOrNull(u.ResultRows), name)
		if err != nil {
			return err
		}
		return s.audit(tx, now, u.Actor, "update_queue", "queue "+name, u.Describe())
	})
	if err != nil {
		return nil, err
	}
	qs, err := s.queues(ctx, name)
	if err != nil {
		return nil, err
	}
	return &qs[0], nil
}

// SetGroupLimit implements queue.Store.
func (s *Store) SetGroupLimit(ctx context.Context, name string, maxRunning int, actor string) error {
	return s.write(ctx, "setting limit of group "+name, func(ctx context.Context, tx *sql.Tx, now int64) error {
		_, err := tx.Exec(`INSERT INTO readpast_groups (name, max_running, updated_at, updated_by) VALUES (?, ?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET max_running = excluded.max_running,
			updated_at = excluded.updated_at, updated_by = excluded.updated_by`, name, maxRunning, now, actor)
		if err != nil {
			return err
		}
		return s.audit(tx, now, actor, "set_group_limit", "group "+name, strconv.Itoa(maxRunning))
	})
}

func stringOrNull(p *string) sql.NullString {
	if p == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: *p, Valid: true}
}

func intOrNull(p *int) sql.NullInt64 {
	if p == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: int64(*p), Valid: true}
}

func taskTarget(id int64) string { return "task " + strconv.FormatInt(id, 10) }
