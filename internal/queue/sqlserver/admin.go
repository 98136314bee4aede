package sqlserver

import (
	"context"
	"database/sql"
	"fmt"

	"readpast/internal/queue"
)

// Cancel cancels a pending task at once (its chain's later stages follow the
// chain failure policy), or sets cancel_requested on a running task for its
// holder to see in its next heartbeat. It returns the state afterwards:
// cancelled, or running. A finished task gives queue.ErrInvalidState.
func (s *Store) Cancel(ctx context.Context, id int64, actor string) (queue.State, error) {
	if err := checkActor(actor); err != nil {
		return "", err
	}
	var before, after sql.NullString
	err := retryConflicts(ctx, func() error {
		return s.write(ctx, func(ctx context.Context, c *sql.Conn) error {
			return c.QueryRowContext(ctx, cancelBatch.text, taskActorArgs(id, actor)...).Scan(&before, &after)
		})
	})
	if err != nil {
		return "", wrap(fmt.Sprintf("cancelling task %d", id), err)
	}
	switch st := queue.State(before.String); {
	case !before.Valid:
		return "", fmt.Errorf("cancelling task %d: %w", id, queue.ErrNotFound)
	case st.Finished():
		return st, fmt.Errorf("cancelling task %d: it is already %s: %w", id, st, queue.ErrInvalidState)
	}
	return queue.State(after.String), nil
}

// Retry puts a failed or cancelled task back to pending now, with a fresh
// attempt budget; the chain stages cancelled because of it are reopened.
func (s *Store) Retry(ctx context.Context, id int64, actor string) error {
	if err := checkActor(actor); err != nil {
		return err
	}
	var (
		before   sql.NullString
		conflict bool
	)
	err := retryConflicts(ctx, func() error {
		return s.write(ctx, func(ctx context.Context, c *sql.Conn) error {
			return c.QueryRowContext(ctx, retryBatch.text, taskActorArgs(id, actor)...).Scan(&before, &conflict)
		})
	})
	if isDuplicateKey(err) || (err == nil && conflict) {
		// The check in the batch, or the unique index itself when an enqueue
		// of the same key won the race.
		return fmt.Errorf("retrying task %d: another unfinished task of its queue has its unique key: %w", id, queue.ErrInvalidState)
	}
	if err != nil {
		return wrap(fmt.Sprintf("retrying task %d", id), err)
	}
	switch st := queue.State(before.String); {
	case !before.Valid:
		return fmt.Errorf("retrying task %d: %w", id, queue.ErrNotFound)
	case st != queue.StateFailed && st != queue.StateCancelled:
		return fmt.Errorf("retrying task %d: it is %s, only failed or cancelled tasks can be retried: %w", id, st, queue.ErrInvalidState)
	}
	return nil
}

// taskActorArgs binds @id and @actor (cancel, retry).
func taskActorArgs(id int64, actor string) []any {
	return []any{sql.Named("id", id), sql.Named("actor", actor)}
}

// UpdateQueue changes a queue's settings, creating the queue if needed, records
// who did it in the audit table, and returns the queue as it is now.
func (s *Store) UpdateQueue(ctx context.Context, name string, u queue.QueueUpdate) (*queue.Queue, error) {
	if err := checkActor(u.Actor); err != nil {
		return nil, err
	}
	args := updateQueueArgs(name, u)
	err := retryDeadlock(ctx, func() error {
		return s.exec(ctx, updateQueueBatch.text, args...)
	})
	if err != nil {
		return nil, wrap(fmt.Sprintf("updating queue %q", name), err)
	}
	qs, err := s.queues(ctx, name)
	if err != nil {
		return nil, err
	}
	if len(qs) == 0 {
		return nil, fmt.Errorf("reading queue %q after the update: %w", name, queue.ErrNotFound)
	}
	return &qs[0], nil
}

// updateQueueArgs binds the update-queue batch's parameters; the audit detail
// is u.Describe().
func updateQueueArgs(name string, u queue.QueueUpdate) []any {
	workers, maxRunning, paused := 0, 0, false
	if u.Workers != nil {
		workers = *u.Workers
	}
	if u.MaxRunning != nil {
		maxRunning = *u.MaxRunning
	}
	if u.Paused != nil {
		paused = *u.Paused
	}
	defaultTarget := ""
	if u.DefaultTarget != nil {
		defaultTarget = *u.DefaultTarget
	}
	resultRows := 0
	if u.ResultRows != nil {
		resultRows = *u.ResultRows
	}
	interval, capMS := queue.RetryMillis(u.Retry)
	return []any{
		sql.Named("name", name),
		sql.Named("actor", u.Actor),
		sql.Named("set_workers", bit(u.Workers != nil)),
		sql.Named("workers", workers),
		sql.Named("clear_max_running", bit(u.ClearMaxRunning)),
		sql.Named("set_max_running", bit(u.MaxRunning != nil)),
		sql.Named("max_running", maxRunning),
		sql.Named("set_paused", bit(u.Paused != nil)),
		sql.Named("paused", bit(paused)),
		sql.Named("detail", maxText(u.Describe())),
		sql.Named("set_default_target", bit(u.DefaultTarget != nil)),
		sql.Named("default_target", defaultTarget),
		// A set policy and a cleared one both write both columns (NULLs to clear).
		sql.Named("set_retry", bit(u.Retry != nil || u.ClearRetry)),
		sql.Named("retry_interval_ms", nullMillis(interval)),
		sql.Named("retry_cap_ms", nullMillis(capMS)),
		sql.Named("set_result_rows", bit(u.ResultRows != nil)),
		sql.Named("result_rows", resultRows),
	}
}

// nullMillis is a bigint parameter, NULL for nil.
func nullMillis(v *int64) any {
	if v == nil {
		return sql.NullInt64{}
	}
	return *v
}

// SetGroupLimit sets how many tasks of a group may run at once, creating the
// group if needed. A limit below what runs now lets those finish and admits no
// more until the group is under it.
func (s *Store) SetGroupLimit(ctx context.Context, name string, maxRunning int, actor string) error {
	if err := checkActor(actor); err != nil {
		return err
	}
	err := retryDeadlock(ctx, func() error {
		return s.exec(ctx, setGroupLimitBatch.text, setGroupLimitArgs(name, maxRunning, actor)...)
	})
	return wrap(fmt.Sprintf("setting the limit of group %q", name), err)
}

// setGroupLimitArgs binds the set-group-limit batch's parameters.
func setGroupLimitArgs(name string, maxRunning int, actor string) []any {
	return []any{sql.Named("name", name), sql.Named("max_running", maxRunning), sql.Named("actor", actor)}
}

// checkActor validates who is acting (audit rows keep at most 128 characters).
func checkActor(actor string) error {
	if len(actor) > queue.MaxNameLength {
		return &queue.ValidationError{Field: "actor", Reason: fmt.Sprintf("is longer than %d bytes", queue.MaxNameLength)}
	}
	return nil
}
