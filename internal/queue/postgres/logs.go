package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"readpast/internal/queue"
)

// attemptColumns is the column list of an execution-log read, in scanAttempt's order.
const attemptColumns = `id, task_id, attempt, queue, node, worker, session_id, started_at,
	finished_at, duration_ms, outcome, error, rows_affected, messages`

func scanAttempt(row pgx.Row) (queue.AttemptRecord, error) {
	var r queue.AttemptRecord
	var ms int64
	var outcome string
	err := row.Scan(&r.ID, &r.TaskID, &r.Attempt, &r.Queue, &r.Node, &r.Worker, &r.SessionID, &r.StartedAt,
		&r.FinishedAt, &ms, &outcome, &r.Error, &r.RowsAffected, &r.Messages)
	r.StartedAt, r.FinishedAt = r.StartedAt.UTC(), r.FinishedAt.UTC()
	r.Duration, r.Outcome = time.Duration(ms)*time.Millisecond, queue.Outcome(outcome)
	return r, err
}

// scanAttempts reads every row of attemptColumns.
func scanAttempts(rows pgx.Rows) ([]queue.AttemptRecord, error) {
	defer rows.Close()
	var out []queue.AttemptRecord
	for rows.Next() {
		r, err := scanAttempt(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Attempts implements queue.LogStore: keyset pages newest first (attemptsSQL).
func (s *Store) Attempts(ctx context.Context, q queue.LogQuery) ([]queue.AttemptRecord, error) {
	query, args := attemptsSQL(q)
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, wrap(err, "querying the execution log")
	}
	out, err := scanAttempts(rows)
	return out, wrap(err, "querying the execution log")
}

// attemptsSQL is Attempts' query (id < Before ORDER BY id DESC). A task's
// attempts are read by readpast_attempts_task; a queue's, an outcome's or both
// by readpast_attempts_list (queue, outcome, id), one range per outcome or per
// queue merged (migrations/*/000001_baseline); a time range alone by
// readpast_attempts_finished.
func attemptsSQL(q queue.LogQuery) (string, []any) {
	limit := q.Limit // checked and defaulted by queue.Checked
	pg := &page{cols: attemptColumns, table: "readpast_attempts"}
	if q.TaskID != 0 {
		pg.add("task_id = $%d", q.TaskID)
	}
	if q.Queue != "" {
		pg.add("queue = $%d", q.Queue)
	}
	if q.Outcome != "" {
		pg.where = append(pg.where, "outcome = "+literal(string(q.Outcome)))
	}
	if !q.Since.IsZero() {
		pg.add("finished_at >= $%d", q.Since)
	}
	if !q.Until.IsZero() {
		pg.add("finished_at < $%d", q.Until)
	}
	if q.Before > 0 {
		pg.add("id < $%d", q.Before)
	}
	var query string
	var args []any
	switch {
	case q.TaskID == 0 && q.Queue != "" && q.Outcome == "":
		query, args = pg.split(equalsEach("outcome", queue.Outcomes), limit)
	case q.TaskID == 0 && q.Queue == "" && q.Outcome != "":
		query, args = pg.perQueue(limit)
	default:
		query, args = pg.one(limit)
	}
	return query, args
}

// PurgeAttempts implements queue.LogStore. One short statement deletes at most
// batch rows; rows another transaction has locked are skipped, so a purge never
// waits on, or makes wait, anything else.
func (s *Store) PurgeAttempts(ctx context.Context, cutoff time.Time, batch int) (int64, error) {
	return s.purge(ctx, "purging the execution log", `DELETE FROM readpast_attempts WHERE id IN (
		SELECT id FROM readpast_attempts WHERE finished_at < $1
		 ORDER BY finished_at LIMIT $2 FOR UPDATE SKIP LOCKED)`, cutoff, batch)
}

// PurgeTasks implements queue.LogStore: finished tasks only, at most batch per
// call, skipping rows locked by anyone else (a retry, a cancel) instead of
// waiting for them.
func (s *Store) PurgeTasks(ctx context.Context, cutoff time.Time, batch int) (int64, error) {
	// The finished counts shrink in the same statement.
	var n int64
	err := s.write(ctx, func(ctx context.Context, c conn) error {
		return c.QueryRow(ctx, `WITH gone AS (
		DELETE FROM readpast_tasks WHERE id IN (
			SELECT id FROM readpast_tasks WHERE state IN ('succeeded', 'failed', 'cancelled') AND finished_at < $1
			 ORDER BY finished_at LIMIT $2 FOR UPDATE SKIP LOCKED)
		RETURNING id, queue, state),
	results AS (
		DELETE FROM readpast_results WHERE task_id IN (SELECT id FROM gone)),
	counted AS (
		SELECT readpast_count(array_agg(queue), array_agg(state), array_agg(-1::bigint)) FROM gone)
	SELECT count(*) FROM gone, counted`, cutoff, batch).Scan(&n)
	})
	return n, wrap(err, "purging finished tasks")
}

func (s *Store) purge(ctx context.Context, what, query string, cutoff time.Time, batch int) (int64, error) {
	tag, err := s.execTag(ctx, query, cutoff, batch)
	if err != nil {
		return 0, wrap(err, "%s", what)
	}
	return tag.RowsAffected(), nil
}

// QueueSettings implements queue.Store: the settings rows only, no
// counts, so every node can read them each second at the cost of one small scan.
func (s *Store) QueueSettings(ctx context.Context) ([]queue.Queue, error) {
	rows, err := s.pool.Query(ctx, `SELECT name, workers, max_running, paused, updated_at, updated_by, default_target, retry_interval_ms, retry_cap_ms, result_rows
		FROM readpast_queues ORDER BY name`)
	if err != nil {
		return nil, wrap(err, "reading queue settings")
	}
	defer rows.Close()
	var out []queue.Queue
	for rows.Next() {
		var q queue.Queue
		var retryMS, capMS *int64
		if err := rows.Scan(&q.Name, &q.Workers, &q.MaxRunning, &q.Paused, &q.UpdatedAt, &q.UpdatedBy, &q.DefaultTarget, &retryMS, &capMS, &q.ResultRows); err != nil {
			return nil, wrap(err, "reading queue settings")
		}
		q.Retry = queue.RetryOf(retryMS, capMS)
		q.UpdatedAt = q.UpdatedAt.UTC()
		out = append(out, q)
	}
	return out, wrap(rows.Err(), "reading queue settings")
}
