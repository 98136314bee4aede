package sqlserver

import (
	"context"
	"database/sql"

	"readpast/internal/queue"
)

// deleteQueueBatch removes a queue with no unfinished task, in one
// transaction, and answers 0 (deleted), 1 (no such queue) or 2 (it has
// pending or running tasks). The check reads the queue's pending and
// running range of readpast_tasks_queue_state with HOLDLOCK: an enqueue's
// uncommitted task in it makes the check wait for that enqueue, and no task
// can enter the range until the delete commits. An enqueue that had already
// seen the queue's row and inserts its tasks after the delete commits leaves
// them without a queue row until the next enqueue to that name makes the row
// again (docs/API.md, "DELETE /api/queues/{name}").
var deleteQueueBatch = query{
	name: "delete-queue",
	text: readCommitted + `SET NOCOUNT ON;
SET XACT_ABORT ON;
BEGIN TRAN;

DECLARE @result int = 0;
IF NOT EXISTS (SELECT 1 FROM dbo.readpast_queues AS q WITH (UPDLOCK, HOLDLOCK) WHERE q.name = @name)
    SET @result = 1;
ELSE IF EXISTS (SELECT 1 FROM dbo.readpast_tasks AS t WITH (HOLDLOCK)
                WHERE t.queue = @name AND t.state IN ('pending', 'running'))
    SET @result = 2;
ELSE IF EXISTS (SELECT 1 FROM dbo.readpast_counts AS c WHERE c.queue = @name -- a state's stripes summed
                GROUP BY c.state HAVING SUM(c.n) <> 0)
    SET @result = 3;
ELSE
BEGIN
    DELETE FROM dbo.readpast_queues WHERE name = @name;
    INSERT INTO dbo.readpast_audit (actor, action, target, detail)
    VALUES (@actor, N'delete_queue', N'queue ' + @name, N'');
END

COMMIT TRAN;
SELECT @result;
`,
	params: []string{"name", "actor"},
}

// deleteQueueArgs binds the delete-queue batch's parameters.
func deleteQueueArgs(name, actor string) []any {
	return []any{sql.Named("name", name), sql.Named("actor", actor)}
}

// DeleteQueue implements queue.QueueStore.
func (s *Store) DeleteQueue(ctx context.Context, name, actor string) error {
	if err := queue.CheckQueueName("name", name); err != nil {
		return err
	}
	var result int
	err := retryDeadlock(ctx, func() error {
		return s.write(ctx, func(ctx context.Context, c *sql.Conn) error {
			return c.QueryRowContext(ctx, deleteQueueBatch.text, deleteQueueArgs(name, actor)...).Scan(&result)
		})
	})
	switch {
	case err != nil:
		return wrap("deleting queue "+name, err)
	case result == 1:
		return queue.QueueUnknown(name)
	case result == 2, result == 3:
		return queue.QueueNotEmpty(name, result == 2)
	}
	return nil
}
