-- Back to the ready indexes of migration 000001 (the target a residual
-- predicate of the claim).
SET XACT_ABORT ON;
BEGIN TRANSACTION;

CREATE INDEX readpast_tasks_ready ON dbo.readpast_tasks (queue, priority, available_at, id)
    WHERE state = 'pending' AND chain_wait = 0 AND delayed = 0 AND group_name IS NULL;
CREATE INDEX readpast_tasks_ready_grouped ON dbo.readpast_tasks (queue, group_name, priority, available_at, id)
    WHERE state = 'pending' AND chain_wait = 0 AND delayed = 0 AND group_name IS NOT NULL;
DROP INDEX readpast_tasks_ready_target ON dbo.readpast_tasks;
DROP INDEX readpast_tasks_ready_grouped_target ON dbo.readpast_tasks;

COMMIT TRANSACTION;
