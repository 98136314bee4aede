-- All or nothing: golang-migrate sends the file as one batch; XACT_ABORT rolls
-- the transaction back on any error, and a batch cut short leaves it open until
-- the migration's session ends, which rolls it back (queue.MigrateUp).
SET XACT_ABORT ON;
BEGIN TRANSACTION;

DROP INDEX readpast_tasks_finished ON dbo.readpast_tasks;
DROP INDEX readpast_tasks_delayed ON dbo.readpast_tasks;
DROP INDEX readpast_tasks_ready_grouped ON dbo.readpast_tasks;
DROP INDEX readpast_tasks_ready ON dbo.readpast_tasks;
CREATE INDEX readpast_tasks_claim ON dbo.readpast_tasks (queue, priority, available_at, id)
    INCLUDE (group_name) WHERE state = 'pending' AND chain_wait = 0;
-- The default is a named constraint on SQL Server, to drop before its column;
-- Babelfish keeps no such name, and drops the default with the column.
IF EXISTS (SELECT 1 FROM sys.default_constraints WHERE name = N'readpast_tasks_delayed_df')
    ALTER TABLE dbo.readpast_tasks DROP CONSTRAINT readpast_tasks_delayed_df;
ALTER TABLE dbo.readpast_tasks DROP COLUMN delayed;

COMMIT TRANSACTION;
