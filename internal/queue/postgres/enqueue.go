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
	err := s.write(ctx, func(ctx context.Context, c conn) error {
		rows, err := c.Query(ctx, enqueueSQL, enqueueArgs(tasks)...)
		if err == nil {
			out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (queue.Enqueued, error) {
				var e queue.Enqueued
				err := r.Scan(&e.ID, &e.Duplicate)
				return e, err
			})
		}
		return err
	})
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
