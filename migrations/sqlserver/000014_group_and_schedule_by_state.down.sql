-- All or nothing, as the up migration; the old indexes are built first.
SET XACT_ABORT ON;
BEGIN TRANSACTION;

CREATE INDEX readpast_tasks_group ON dbo.readpast_tasks (group_name, id) WHERE group_name IS NOT NULL;
CREATE INDEX readpast_tasks_schedule ON dbo.readpast_tasks (schedule_name, id) WHERE schedule_name IS NOT NULL;
DROP INDEX readpast_tasks_group_state ON dbo.readpast_tasks;
DROP INDEX readpast_tasks_schedule_state ON dbo.readpast_tasks;

COMMIT TRANSACTION;
