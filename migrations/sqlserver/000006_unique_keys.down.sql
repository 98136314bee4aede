-- All or nothing: golang-migrate sends the file as one batch; XACT_ABORT rolls
-- the transaction back on any error, and a batch cut short leaves it open until
-- the migration's session ends, which rolls it back (queue.MigrateUp).
SET XACT_ABORT ON;
BEGIN TRANSACTION;

DROP INDEX readpast_tasks_unique ON dbo.readpast_tasks;
ALTER TABLE dbo.readpast_tasks DROP COLUMN unique_key;

COMMIT TRANSACTION;
