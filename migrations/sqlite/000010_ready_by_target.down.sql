-- Back to the ready indexes of migration 000004: the target last.
CREATE INDEX readpast_tasks_ready ON readpast_tasks (queue, transactional, priority, available_at, id, target)
    WHERE state = 'pending' AND chain_wait = 0 AND delayed = 0 AND group_name IS NULL;
CREATE INDEX readpast_tasks_ready_grouped ON readpast_tasks (queue, group_name, priority, available_at, id, target)
    WHERE state = 'pending' AND chain_wait = 0 AND delayed = 0 AND group_name IS NOT NULL;
DROP INDEX readpast_tasks_ready_target;
DROP INDEX readpast_tasks_ready_grouped_target;
