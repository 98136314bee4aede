DROP INDEX readpast_tasks_ready;
CREATE INDEX readpast_tasks_ready ON readpast_tasks (queue, transactional, priority, available_at, id)
    WHERE state = 'pending' AND chain_wait = 0 AND delayed = 0 AND group_name IS NULL;
DROP INDEX readpast_tasks_ready_grouped;
CREATE INDEX readpast_tasks_ready_grouped ON readpast_tasks (queue, group_name, priority, available_at, id)
    WHERE state = 'pending' AND chain_wait = 0 AND delayed = 0 AND group_name IS NOT NULL;
ALTER TABLE readpast_schedules DROP COLUMN target;
ALTER TABLE readpast_queues DROP COLUMN default_target;
ALTER TABLE readpast_tasks DROP COLUMN target;
