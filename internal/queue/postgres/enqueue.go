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
	named := hasNames(tasks)
	err := s.write(ctx, func(ctx context.Context, c conn) error {
		if named {
			return s.enqueueNamed(ctx, c, tasks, &out)
		}
		var err error
		out, err = enqueueOn(ctx, c, tasks)
		return err
	})
	if err != nil {
		return nil, wrap(err, "enqueueing %d tasks", len(tasks))
	}
	return out, nil
}

const enqueueSQL = `SELECT out_id, out_duplicate FROM readpast_enqueue($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`

// enqueueArgs binds readpast_enqueue's parallel arrays for normalized tasks.
func enqueueArgs(tasks []queue.NewTask) []any {
	n := len(tasks)
	var (
		queues, bodies, groups, chains, createdBy = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		keys                                      = make([]string, n)
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
		transactional[i], cont[i], keys[i] = t.Transactional, t.ContinueOnFailure, t.UniqueKey
	}
	return []any{queues, bodies, priorities, at, delayUS, groups, chains, stages, maxAttempts, timeoutMS, transactional, cont, createdBy, keys}
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

// enqueueNamed is Enqueue of a batch with names: readpast_enqueue, then the
// names of the tasks it created (not of the duplicates, which are other
// tasks), in one transaction. A batch without names, the common case, is the
// one statement of readpast_enqueue, as before names existed.
func (s *Store) enqueueNamed(ctx context.Context, c conn, tasks []queue.NewTask, out *[]queue.Enqueued) error {
	tx, err := c.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	res, err := enqueueOn(ctx, tx, tasks)
	if err != nil {
		return err
	}
	var ids []int64
	var names []string
	for i, r := range res {
		if !r.Duplicate && tasks[i].Name != "" {
			ids, names = append(ids, r.ID), append(names, tasks[i].Name)
		}
	}
	if len(ids) > 0 {
		if _, err := tx.Exec(ctx, `UPDATE readpast_tasks t SET name = x.name
			FROM unnest($1::bigint[], $2::text[]) AS x(id, name) WHERE t.id = x.id`, ids, names); err != nil {
			return err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	*out = res
	return nil
}
