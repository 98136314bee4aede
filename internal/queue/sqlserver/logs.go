package sqlserver

import (
	"context"
	"database/sql"
	"time"

	"readpast/internal/queue"
)

// Attempts returns execution-log rows newest first, one keyset page at a time.
func (s *Store) Attempts(ctx context.Context, q queue.LogQuery) ([]queue.AttemptRecord, error) {
	lq, args := attemptsArgs(q)
	out, err := queryAll(ctx, s.db, lq.text, args, scanAttempt)
	if err != nil {
		return nil, wrap("querying the execution log", err)
	}
	return out, nil
}

// attemptsArgs validates a log query, picks the query for its filters
// (attemptsQuery; one queue's attempts of every outcome merge a range per
// outcome, attemptsOfQueueQuery) and binds that query's parameters.
func attemptsArgs(q queue.LogQuery) (query, []any) {
	limit := q.Limit // checked and defaulted by queue.Checked
	lq := attemptsQuery
	if q.TaskID == 0 && q.Queue != "" && q.Outcome == "" {
		lq = attemptsOfQueueQuery
	}
	var outcome any = sql.NullString{}
	if q.Outcome != "" {
		outcome = varchar(string(q.Outcome))
	}
	values := map[string]any{
		"limit":   limit,
		"task_id": max(q.TaskID, 0),
		"queue":   nullString(q.Queue),
		"outcome": outcome,
		"since":   datetime2(q.Since),
		"until":   datetime2(q.Until),
		"before":  max(q.Before, 0),
	}
	return lq, namedArgs(lq, values)
}

// scanAttempt reads one row of the attempts columns.
func scanAttempt(r *sql.Rows) (queue.AttemptRecord, error) {
	var (
		a          queue.AttemptRecord
		durationMS int64
		outcome    string
	)
	err := r.Scan(&a.ID, &a.TaskID, &a.Attempt, &a.Queue, &a.Node, &a.Worker, &a.SessionID,
		&a.StartedAt, &a.FinishedAt, &durationMS, &outcome, &a.Error, &a.RowsAffected, &a.Messages)
	a.StartedAt = a.StartedAt.UTC()
	a.FinishedAt = a.FinishedAt.UTC()
	a.Duration = time.Duration(durationMS) * time.Millisecond
	a.Outcome = queue.Outcome(outcome)
	return a, err
}

// PurgeAttempts deletes up to batch log rows that finished before cutoff and
// returns how many it deleted.
func (s *Store) PurgeAttempts(ctx context.Context, cutoff time.Time, batch int) (int64, error) {
	return s.purge(ctx, "purging the execution log", purgeAttemptsBatch, cutoff, batch)
}

// PurgeTasks deletes up to batch finished tasks that finished before cutoff.
func (s *Store) PurgeTasks(ctx context.Context, cutoff time.Time, batch int) (int64, error) {
	return s.purge(ctx, "purging finished tasks", purgeTasksBatch, cutoff, batch)
}

func (s *Store) purge(ctx context.Context, what string, q query, cutoff time.Time, batch int) (int64, error) {
	args, err := purgeArgs(cutoff, batch)
	if err != nil {
		return 0, err
	}
	var n int64
	err = retryConflicts(ctx, func() error {
		return s.write(ctx, func(ctx context.Context, c *sql.Conn) error {
			return c.QueryRowContext(ctx, q.text, args...).Scan(&n)
		})
	})
	if err != nil {
		return 0, wrap(what, err)
	}
	return n, nil
}

// purgeArgs validates and binds a purge's parameters.
func purgeArgs(cutoff time.Time, batch int) ([]any, error) {
	if cutoff.IsZero() {
		return nil, &queue.ValidationError{Field: "cutoff", Reason: "is not set"}
	}
	return []any{sql.Named("batch", batch), sql.Named("cutoff", datetime2(cutoff))}, nil
}

// QueueSettings reads every queue's settings without counting its tasks.
func (s *Store) QueueSettings(ctx context.Context) ([]queue.Queue, error) {
	out, err := queryAll(ctx, s.db, queueSettingsQuery.text, nil, func(r *sql.Rows) (queue.Queue, error) {
		var (
			q                   queue.Queue
			workers, maxRunning sql.NullInt64
			retryMS, capMS      sql.NullInt64
		)
		err := r.Scan(&q.Name, &workers, &maxRunning, &q.Paused, &q.UpdatedAt, &q.UpdatedBy, &q.DefaultTarget, &retryMS, &capMS, &q.ResultRows)
		q.Workers, q.MaxRunning, q.UpdatedAt = intPtr(workers), intPtr(maxRunning), q.UpdatedAt.UTC()
		q.Retry = queue.RetryOf(nullInt64(retryMS), nullInt64(capMS))
		return q, err
	})
	if err != nil {
		return nil, wrap("reading queue settings", err)
	}
	return out, nil
}
