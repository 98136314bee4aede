package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"readpast/internal/queue"
)

// Enqueue implements queue.Store.
func (s *Store) Enqueue(ctx context.Context, tasks []queue.NewTask) ([]queue.Enqueued, error) {
	var out []queue.Enqueued
	err := s.write(ctx, "enqueueing tasks", func(ctx context.Context, tx *sql.Tx, now int64) error {
		var err error
		out, err = enqueueTx(ctx, tx, now, tasks)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// enqueueTx writes normalized tasks inside the caller's write transaction.
// A keyed task whose key an unfinished task of its queue holds is that task:
// the partial unique index readpast_tasks_unique arbitrates (SQLite's one
// writer makes the look-up after it race-free).
func enqueueTx(ctx context.Context, tx *sql.Tx, now int64, tasks []queue.NewTask) ([]queue.Enqueued, error) {
	out := make([]queue.Enqueued, 0, len(tasks))
	chains := map[string]bool{}
	for _, t := range tasks {
		if err := ensureRows(tx, now, t); err != nil {
			return nil, err
		}
		if t.Chain != "" {
			chains[t.Chain] = true
		}
	}
	ins, err := tx.PrepareContext(ctx, `INSERT INTO readpast_tasks
		(queue, body, priority, available_at, delayed, group_name, chain, stage, continue_on_failure,
		 max_attempts, timeout_ms, transactional, created_at, created_by, unique_key, target, retry_interval_ms, retry_cap_ms, name)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (queue, unique_key) WHERE unique_key IS NOT NULL AND state IN ('pending', 'running') DO NOTHING`)
	if err != nil {
		return nil, err
	}
	defer ins.Close()
	for _, t := range tasks {
		at := now + t.Delay.Microseconds()
		if !t.AvailableAt.IsZero() {
			at = micros(t.AvailableAt)
		}
		interval, capMS := queue.RetryMillis(t.Retry)
		res, err := ins.ExecContext(ctx, t.Queue, t.Body, *t.Priority, at, boolInt(at > now), nullString(t.Group), nullString(t.Chain),
			t.Stage, boolInt(t.ContinueOnFailure), t.MaxAttempts, t.Timeout.Milliseconds(), boolInt(t.Transactional), now, t.CreatedBy,
			nullString(t.UniqueKey), t.Target, interval, capMS, nullString(t.Name))
		if err != nil {
			return nil, fmt.Errorf("inserting task: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return nil, err
		} else if n == 0 {
			var id int64
			err := tx.QueryRowContext(ctx, `SELECT id FROM readpast_tasks
				WHERE queue = ? AND unique_key = ? AND state IN ('pending', 'running')`, t.Queue, t.UniqueKey).Scan(&id)
			if err != nil {
				return nil, fmt.Errorf("finding the unfinished task with unique key %q: %w", t.UniqueKey, err)
			}
			out = append(out, queue.Enqueued{ID: id, Duplicate: true})
			continue
		}
		id, err := res.LastInsertId()
		if err != nil {
			return nil, err
		}
		out = append(out, queue.Enqueued{ID: id})
	}
	for c := range chains {
		if err := refreshChain(tx, c); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ensureRows creates the queue, group and chain rows a task names.
func ensureRows(tx *sql.Tx, now int64, t queue.NewTask) error {
	if _, err := tx.Exec(`INSERT INTO readpast_queues (name, updated_at) VALUES (?, ?) ON CONFLICT DO NOTHING`, t.Queue, now); err != nil {
		return fmt.Errorf("creating queue %s: %w", t.Queue, err)
	}
	if t.Group != "" {
		if _, err := tx.Exec(`INSERT INTO readpast_groups (name, updated_at) VALUES (?, ?) ON CONFLICT DO NOTHING`, t.Group, now); err != nil {
			return fmt.Errorf("creating group %s: %w", t.Group, err)
		}
	}
	if t.Chain != "" {
		// continue_on_failure is the chain's policy: set by any of its tasks.
		_, err := tx.Exec(`INSERT INTO readpast_chains (name, continue_on_failure, created_at) VALUES (?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET continue_on_failure = max(continue_on_failure, excluded.continue_on_failure)`,
			t.Chain, boolInt(t.ContinueOnFailure), now)
		if err != nil {
			return fmt.Errorf("creating chain %s: %w", t.Chain, err)
		}
	}
	return nil
}
