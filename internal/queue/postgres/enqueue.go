package postgres

import (
	"context"
	"time"

	"readpast/internal/queue"

	"github.com/jackc/pgx/v5"
)

// Enqueue implements queue.Store: the batch (checked by queue.Checked) is
// written by one call of readpast_enqueue (one round trip, one transaction),
// so a batch is all or nothing. In the same transaction it notifies
// NotifyChannel once per distinct queue, so the listeners of every node
// (Listen) hear of the new tasks when they commit.
func (s *Store) Enqueue(ctx context.Context, tasks []queue.NewTask) ([]queue.Enqueued, error) {
	var out []queue.Enqueued
	var err error
	if ids, intervals, caps := retryArgs(tasks); ids == nil && !hasNames(tasks) {
		err = s.write(ctx, func(ctx context.Context, c conn) error {
			var err error
			out, err = enqueueOn(ctx, c, tasks)
			return err
		})
	} else {
		// Tasks with a retry policy or a name of their own: the enqueue, then
		// their policies and names, in one transaction. A batch with neither,
		// the common case, is the one statement of readpast_enqueue.
		err = s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
			var err error
			if out, err = enqueueOn(ctx, tx, tasks); err != nil {
				return err
			}
			if err := setRetryPolicies(ctx, tx, out, ids, intervals, caps); err != nil {
				return err
			}
			return setNames(ctx, tx, tasks, out)
		})
	}
	if err != nil {
		return nil, wrap(err, "enqueueing %d tasks", len(tasks))
	}
	return out, nil
}

const enqueueSQL = `SELECT out_id, out_duplicate FROM readpast_enqueue($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`

// enqueueArgs binds readpast_enqueue's parallel arrays for normalized tasks.
func enqueueArgs(tasks []queue.NewTask) []any {
	n := len(tasks)
	var (
		queues, bodies, groups, chains, createdBy = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		keys, targets                             = make([]string, n), make([]string, n)
		priorities, stages, maxAttempts           = make([]int32, n), make([]int32, n), make([]int32, n)
		at                                        = make([]*time.Time, n)
		delayUS, timeoutMS                        = make([]int64, n), make([]int64, n)
		transactional, cont                       = make([]bool, n), make([]bool, n)
	)
	for i, t := range tasks {
		queues[i], bodies[i], groups[i], chains[i], createdBy[i] = t.Queue, t.Body, t.Group, t.Chain, t.CreatedBy
		priorities[i], stages[i], maxAttempts[i] = int32(*t.Priority), int32(t.Stage), int32(t.MaxAttempts)
		// Delay is relative to the database clock, so it travels as a duration.
		at[i] = nullTime(t.AvailableAt)
		delayUS[i], timeoutMS[i] = t.Delay.Microseconds(), t.Timeout.Milliseconds()
		transactional[i], cont[i], keys[i], targets[i] = t.Transactional, t.ContinueOnFailure, t.UniqueKey, t.Target
	}
	return []any{queues, bodies, priorities, at, delayUS, groups, chains, stages, maxAttempts, timeoutMS, transactional, cont, createdBy, keys, targets}
}

// retryArgs are the positions of the tasks with a retry policy of their own,
// and each task's policy columns; ids is nil when no task has one.
func retryArgs(tasks []queue.NewTask) (ids []int, intervals, caps []*int64) {
	for i, t := range tasks {
		if t.Retry != nil {
			ids = append(ids, i)
		}
	}
	if ids == nil {
		return nil, nil, nil
	}
	intervals, caps = make([]*int64, len(tasks)), make([]*int64, len(tasks))
	for i, t := range tasks {
		intervals[i], caps[i] = queue.RetryMillis(t.Retry)
	}
	return ids, intervals, caps
}

// enqueueOn runs readpast_enqueue on q.
func enqueueOn(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, tasks []queue.NewTask) ([]queue.Enqueued, error) {
	rows, err := q.Query(ctx, enqueueSQL, enqueueArgs(tasks)...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (queue.Enqueued, error) {
		var e queue.Enqueued
		err := r.Scan(&e.ID, &e.Duplicate)
		return e, err
	})
}

// hasNames reports whether a task of the batch has a name.
func hasNames(tasks []queue.NewTask) bool {
	for _, t := range tasks {
		if t.Name != "" {
			return true
		}
	}
	return false
}

// setRetryPolicies writes the policies of the tasks at positions ids that
// the enqueue created (a duplicate is another task, which keeps its own).
func setRetryPolicies(ctx context.Context, tx pgx.Tx, out []queue.Enqueued, ids []int, intervals, caps []*int64) error {
	var newIDs []int64
	var iv, cp []*int64
	for _, i := range ids {
		if !out[i].Duplicate {
			newIDs, iv, cp = append(newIDs, out[i].ID), append(iv, intervals[i]), append(cp, caps[i])
		}
	}
	if len(newIDs) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `UPDATE readpast_tasks t SET retry_interval_ms = x.i, retry_cap_ms = x.c
		FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS x(id, i, c) WHERE t.id = x.id`, newIDs, iv, cp)
	return err
}

// setNames writes the names of the tasks the enqueue created (not of the
// duplicates, which are other tasks).
func setNames(ctx context.Context, tx pgx.Tx, tasks []queue.NewTask, out []queue.Enqueued) error {
	var ids []int64
	var names []string
	for i, r := range out {
		if !r.Duplicate && tasks[i].Name != "" {
			ids, names = append(ids, r.ID), append(names, tasks[i].Name)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `UPDATE readpast_tasks t SET name = x.name
		FROM unnest($1::bigint[], $2::text[]) AS x(id, name) WHERE t.id = x.id`, ids, names)
	return err
}
