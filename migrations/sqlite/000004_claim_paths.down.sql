DROP INDEX readpast_tasks_finished;
DROP INDEX readpast_tasks_delayed;
DROP INDEX readpast_tasks_ready_grouped;
DROP INDEX readpast_tasks_ready;
CREATE INDEX readpast_tasks_claim ON readpast_tasks (queue, priority, available_at, id)
    WHERE state = 'pending' AND chain_wait = 0;
ALTER TABLE readpast_tasks DROP COLUMN delayed;
