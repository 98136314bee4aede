package postgres

import (
	"context"
	"fmt"

	"readpast/internal/queue"
)

const (
	cancelSQL = `SELECT out_found, out_changed, out_state FROM readpast_cancel($1, $2)`
	retrySQL  = `SELECT out_found, out_changed, out_state FROM readpast_retry($1, $2)`
)

// Cancel implements queue.Store (readpast_cancel: pending cancels now, running
// gets cancel_requested, finished is ErrInvalidState).
func (s *Store) Cancel(ctx context.Context, id int64, actor string) (queue.State, error) {
	var found, changed bool
	var state *string
	err := s.write(ctx, func(ctx context.Context, c conn) error {
		return c.QueryRow(ctx, cancelSQL, id, actor).Scan(&found, &changed, &state)
	})
	switch {
	case err != nil:
		return "", wrap(err, "cancelling task %d", id)
	case !found:
		return "", fmt.Errorf("postgres: cancelling task %d: %w", id, queue.ErrNotFound)
	case !changed:
		return queue.State(str(state)), fmt.Errorf("postgres: cancelling task %d: it is %s, and only pending or running tasks can be cancelled: %w",
			id, str(state), queue.ErrInvalidState)
	}
	return queue.State(str(state)), nil
}

// Retry implements queue.Store (readpast_retry).
func (s *Store) Retry(ctx context.Context, id int64, actor string) error {
	var found, changed bool
	var state *string
	err := s.write(ctx, func(ctx context.Context, c conn) error {
		return c.QueryRow(ctx, retrySQL, id, actor).
			Scan(&found, &changed, &state)
	})
	switch {
	case isUniqueViolation(err):
		return fmt.Errorf("postgres: retrying task %d: another unfinished task of its queue has its unique key (or one of the chain tasks it reopens): %w",
			id, queue.ErrInvalidState)
	case err != nil:
		return wrap(err, "retrying task %d", id)
	case !found:
		return fmt.Errorf("postgres: retrying task %d: %w", id, queue.ErrNotFound)
	case !changed:
		return fmt.Errorf("postgres: retrying task %d: it is %s, and only failed or cancelled tasks can be retried: %w",
			id, str(state), queue.ErrInvalidState)
	}
	return nil
}

// UpdateQueue implements queue.Store: one statement upserts the settings and
// writes the audit row.
func (s *Store) UpdateQueue(ctx context.Context, name string, u queue.QueueUpdate) (*queue.Queue, error) {
	interval, capMS := queue.RetryMillis(u.Retry)
	err := s.exec(ctx, `WITH q AS (
			INSERT INTO readpast_queues AS q (name, workers, max_running, paused, updated_by, retry_interval_ms, retry_cap_ms, default_target)
			VALUES ($1, $2, $3, coalesce($5, false), $6, $9, $10, coalesce($11, ''))
			ON CONFLICT (name) DO UPDATE SET
				workers = coalesce($2, q.workers),
				max_running = CASE WHEN $4 THEN NULL ELSE coalesce($3, q.max_running) END,
				paused = coalesce($5, q.paused),
				default_target = coalesce($11, q.default_target),
				updated_at = now(), updated_by = $6,
				retry_interval_ms = CASE WHEN $8 THEN NULL WHEN $9::bigint IS NOT NULL THEN $9 ELSE q.retry_interval_ms END,
				retry_cap_ms = CASE WHEN $8 OR $9::bigint IS NOT NULL THEN $10 ELSE q.retry_cap_ms END
			RETURNING name)
		INSERT INTO readpast_audit (actor, action, target, detail)
		SELECT $6, 'update_queue', 'queue ' || q.name, $7 FROM q`,
		name, u.Workers, u.MaxRunning, u.ClearMaxRunning, u.Paused, u.Actor, u.Describe(), u.ClearRetry, interval, capMS, u.DefaultTarget)
	if err != nil {
		return nil, wrap(err, "updating queue %s", name)
	}
	qs, err := s.queues(ctx, name)
	if err != nil {
		return nil, err
	}
	if len(qs) == 0 {
		return nil, fmt.Errorf("postgres: updating queue %s: %w", name, queue.ErrNotFound)
	}
	return &qs[0], nil
}

// SetGroupLimit implements queue.Store.
func (s *Store) SetGroupLimit(ctx context.Context, name string, maxRunning int, actor string) error {
	err := s.exec(ctx, `WITH g AS (
			INSERT INTO readpast_groups AS g (name, max_running, updated_by) VALUES ($1, $2, $3)
			ON CONFLICT (name) DO UPDATE SET max_running = $2, updated_at = now(), updated_by = $3
			RETURNING name)
		INSERT INTO readpast_audit (actor, action, target, detail)
		SELECT $3, 'set_group_limit', 'group ' || g.name, $2::text FROM g`, name, maxRunning, actor)
	return wrap(err, "setting the limit of group %s", name)
}
