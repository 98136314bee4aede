-- All or nothing: golang-migrate sends the file as one batch; XACT_ABORT rolls
-- the transaction back on any error, and a batch cut short leaves it open until
-- the migration's session ends, which rolls it back (queue.MigrateUp).
SET XACT_ABORT ON;
BEGIN TRANSACTION;

DROP INDEX readpast_tasks_schedule ON dbo.readpast_tasks;
ALTER TABLE dbo.readpast_tasks DROP COLUMN schedule_name;
ALTER TABLE dbo.readpast_tasks DROP COLUMN fire_at;
DROP TABLE dbo.readpast_schedules;

COMMIT TRANSACTION;
