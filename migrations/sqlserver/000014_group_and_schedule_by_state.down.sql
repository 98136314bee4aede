-- All or nothing, as the up migration.
SET XACT_ABORT ON;
BEGIN TRANSACTION;

DROP INDEX readpast_tasks_schedule ON dbo.readpast_tasks;
CREATE INDEX readpast_tasks_schedule ON dbo.readpast_tasks (schedule_name, id) WHERE schedule_name IS NOT NULL;
DROP INDEX readpast_tasks_group ON dbo.readpast_tasks;
CREATE INDEX readpast_tasks_group ON dbo.readpast_tasks (group_name, id) WHERE group_name IS NOT NULL;

COMMIT TRANSACTION;
