package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"readpast/internal/queue"
)

// DeleteQueue implements queue.QueueStore. An enqueue makes sure of its
// queue's row (INSERT … ON CONFLICT DO NOTHING, which takes ROW EXCLUSIVE on
// readpast_queues even when the row exists) in the transaction that inserts
// its tasks. The delete takes SHARE on readpast_queues first: it waits for the
// enqueues in flight to commit, so its check sees their tasks, and holds new
// ones back for the millisecond it lasts. Claims only read the queue rows
// (ROW SHARE) and never wait for it. lock_timeout bounds the wait.
func (s *Store) DeleteQueue(ctx context.Context, name, actor string) error {
	if err := queue.CheckQueueName("name", name); err != nil {
		return err
	}
	var refusal error // given as the sentence it is, not wrapped as a failed write
	err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '5s'; LOCK TABLE readpast_queues IN SHARE MODE`); err != nil {
			return err
		}
		var exists, busy, history bool
		// Pending tasks are a range of readpast_tasks_list, running ones of
		// readpast_tasks_running: neither grows with the queue's history.
		// Finished ones are the readpast_counts rollup: the queue list shows a
		// queue that has any, row or not, so such a queue is not deleted.
		err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM readpast_queues WHERE name = $1),
			EXISTS (SELECT 1 FROM readpast_tasks WHERE queue = $1 AND state = 'pending')
			OR EXISTS (SELECT 1 FROM readpast_tasks WHERE state = 'running' AND queue = $1),
			EXISTS (SELECT 1 FROM readpast_counts WHERE queue = $1 AND n <> 0)`, name).Scan(&exists, &busy, &history)
		switch {
		case err != nil:
			return err
		case !exists:
			refusal = queue.QueueUnknown(name)
			return refusal
		case busy || history:
			refusal = queue.QueueNotEmpty(name, busy)
			return refusal
		}
		_, err = tx.Exec(ctx, `WITH d AS (DELETE FROM readpast_queues WHERE name = $1 RETURNING name)
			INSERT INTO readpast_audit (actor, action, target, detail) SELECT $2, 'delete_queue', 'queue ' || d.name, '' FROM d`,
			name, actor)
		return err
	})
	if refusal != nil {
		return refusal
	}
	return wrap(err, "deleting queue %s", name)
}
