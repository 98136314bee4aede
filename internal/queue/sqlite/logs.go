package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"readpast/internal/queue"
)

const attemptColumns = `id, task_id, attempt, queue, node, worker, session_id, started_at,
	finished_at, duration_ms, outcome, error, rows_affected, messages`

func scanAttempt(r scanner) (queue.AttemptRecord, error) {
	var a queue.AttemptRecord
	var started, finished, ms int64
	err := r.Scan(&a.ID, &a.TaskID, &a.Attempt, &a.Queue, &a.Node, &a.Worker, &a.SessionID, &started,
		&finished, &ms, &a.Outcome, &a.Error, &a.RowsAffected, &a.Messages)
	a.StartedAt, a.FinishedAt, a.Duration = fromMicros(started), fromMicros(finished), time.Duration(ms)*time.Millisecond
	return a, err
}

// Attempts implements queue.LogStore: keyset pages newest first
// (attemptsSQL).
func (s *Store) Attempts(ctx context.Context, q queue.LogQuery) ([]queue.AttemptRecord, error) {
	query, args := attemptsSQL(q)
	rows, err := s.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("querying the execution log: %w", err)
	}
	defer rows.Close()
	var out []queue.AttemptRecord
	for rows.Next() {
		a, err := scanAttempt(rows)
		if err != nil {
			return nil, fmt.Errorf("querying the execution log: %w", err)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// attemptsSQL is Attempts' query (id < Before ORDER BY id DESC). A task's
// attempts are read by readpast_attempts_task, an outcome's by
// readpast_attempts_outcome (outcome, id), a queue's of one outcome by
// readpast_attempts_list (queue, outcome, id), and a queue's of every outcome
// by one range of that index per outcome, the newest rows of each merged
// (migrations/*/000001_baseline): each costs the same however long the history is.
func attemptsSQL(q queue.LogQuery) (string, []any) {
	limit := q.Limit // checked and defaulted by queue.Checked
	var where []string
	var args []any
	add := func(cond string, v any) { where = append(where, cond); args = append(args, v) }
	if q.TaskID != 0 {
		add("task_id = ?", q.TaskID)
	}
	if q.Queue != "" {
		add("queue = ?", q.Queue)
	}
	if q.Outcome != "" {
		add("outcome = ?", string(q.Outcome))
	}
	if !q.Since.IsZero() {
		add("finished_at >= ?", micros(q.Since))
	}
	if !q.Until.IsZero() {
		add("finished_at < ?", micros(q.Until))
	}
	if q.Before > 0 {
		add("id < ?", q.Before)
	}
	if q.TaskID == 0 && q.Queue != "" && q.Outcome == "" {
		query, args := mergedPage(attemptColumns, "readpast_attempts", where, args, "outcome", queue.Outcomes, limit)
		return query, args
	}
	query, args := keysetPage(attemptColumns, "readpast_attempts", where, args, limit)
	return query, args
}

// TaskAttempts implements queue.Store.
func (s *Store) TaskAttempts(ctx context.Context, taskID int64) ([]queue.AttemptRecord, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+attemptColumns+` FROM readpast_attempts WHERE task_id = ? ORDER BY attempt, id`, taskID)
	if err != nil {
		return nil, fmt.Errorf("reading attempts of task %d: %w", taskID, err)
	}
	defer rows.Close()
	var out []queue.AttemptRecord
	for rows.Next() {
		a, err := scanAttempt(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// PurgeAttempts implements queue.LogStore.
func (s *Store) PurgeAttempts(ctx context.Context, cutoff time.Time, batch int) (int64, error) {
	return s.purge(ctx, "purging the execution log", `DELETE FROM readpast_attempts WHERE id IN
		(SELECT id FROM readpast_attempts WHERE finished_at < ? ORDER BY finished_at LIMIT ?)`, cutoff, batch)
}

// PurgeTasks implements queue.LogStore; the finished counts shrink in the same
// transaction.
func (s *Store) PurgeTasks(ctx context.Context, cutoff time.Time, batch int) (int64, error) {
	var n int64
	err := s.writeUndurable(ctx, "purging finished tasks", func(ctx context.Context, tx *sql.Tx, _ int64) error {
		rows, err := tx.QueryContext(ctx, `DELETE FROM readpast_tasks WHERE id IN
			(SELECT id FROM readpast_tasks INDEXED BY readpast_tasks_finished
			  WHERE state IN ('succeeded','failed','cancelled') AND finished_at < ? ORDER BY finished_at LIMIT ?)
			RETURNING id, queue, state`, micros(cutoff), batch)
		if err != nil {
			return err
		}
		gone := map[[2]string]int64{}
		var ids []int64
		for rows.Next() {
			var k [2]string
			var id int64
			if err := rows.Scan(&id, &k[0], &k[1]); err != nil {
				rows.Close()
				return err
			}
			gone[k]++
			ids = append(ids, id)
			n++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if err := deleteResults(tx, ids); err != nil {
			return err
		}
		for k, by := range gone {
			if err := countFinished(tx, k[0], queue.State(k[1]), -by); err != nil {
				return err
			}
		}
		return nil
	})
	return n, err
}

func (s *Store) purge(ctx context.Context, what, query string, cutoff time.Time, batch int) (int64, error) {
	var n int64
	err := s.writeUndurable(ctx, what, func(ctx context.Context, tx *sql.Tx, _ int64) error {
		r, err := tx.Exec(query, micros(cutoff), batch)
		if err != nil {
			return err
		}
		n, err = r.RowsAffected()
		return err
	})
	return n, err
}

// QueueSettings implements queue.Store.
func (s *Store) QueueSettings(ctx context.Context) ([]queue.Queue, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+queueColumns+` FROM readpast_queues ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("reading queue settings: %w", err)
	}
	defer rows.Close()
	var out []queue.Queue
	for rows.Next() {
		q, err := scanQueue(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, q)
	}
	return out, rows.Err()
}

// queueColumns are a queue's settings, as scanQueue reads them.
const queueColumns = `name, workers, max_running, paused, updated_at, updated_by, default_target, retry_interval_ms, retry_cap_ms, result_rows`

func scanQueue(r scanner) (queue.Queue, error) {
	var q queue.Queue
	var workers, maxRunning, retryMS, capMS sql.NullInt64
	var updated int64
	err := r.Scan(&q.Name, &workers, &maxRunning, &q.Paused, &updated, &q.UpdatedBy, &q.DefaultTarget, &retryMS, &capMS, &q.ResultRows)
	q.Workers, q.MaxRunning, q.UpdatedAt = intPtr(workers), intPtr(maxRunning), fromMicros(updated)
	q.Retry = queue.RetryOf(int64Ptr(retryMS), int64Ptr(capMS))
	return q, err
}

func int64Ptr(v sql.NullInt64) *int64 {
	if !v.Valid {
		return nil
	}
	return &v.Int64
}
