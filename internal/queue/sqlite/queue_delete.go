package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"readpast/internal/queue"
)

// DeleteQueue implements queue.QueueStore: a queue that holds no task at
// all, unfinished or finished (readpast_counts), since the other dialects
// list a queue that has counted tasks with or without its row. SQLite's one
// writer orders it with every enqueue: one that committed before is seen by
// the check, one after makes the queue again.
func (s *Store) DeleteQueue(ctx context.Context, name, actor string) error {
	if err := queue.CheckQueueName("name", name); err != nil {
		return err
	}
	var refusal error // given as the sentence it is, not wrapped as a failed write
	err := s.write(ctx, "deleting queue "+name, func(ctx context.Context, tx *sql.Tx, now int64) error {
		var busy, history bool
		err := tx.QueryRow(`SELECT EXISTS (SELECT 1 FROM readpast_tasks WHERE queue = ?1 AND state IN ('pending', 'running')),
			EXISTS (SELECT 1 FROM readpast_counts WHERE queue = ?1 AND n <> 0)
			FROM readpast_queues WHERE name = ?1`, name).Scan(&busy, &history)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			refusal = queue.QueueUnknown(name)
		case err != nil:
			return err
		case busy || history:
			refusal = queue.QueueNotEmpty(name, busy)
		}
		if refusal != nil {
			return refusal
		}
		if _, err := tx.Exec(`DELETE FROM readpast_queues WHERE name = ?`, name); err != nil {
			return err
		}
		return s.audit(tx, now, actor, "delete_queue", "queue "+name, "")
	})
	if refusal != nil {
		return refusal
	}
	return err
}
