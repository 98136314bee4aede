-- Unique keys on enqueue (docs/QUEUE.md, "Unique keys"): a filtered unique
-- index over unfinished keyed tasks arbitrates. A claim keeps a task inside the
-- filter with the same key, so SQL Server does not touch the index row (the key
-- and the filter's outcome are unchanged) and no claimer waits on a key check:
-- the seed's filtered-unique-index trap needs a row entering the filter.

-- All or nothing: golang-migrate sends the file as one batch; XACT_ABORT rolls
-- the transaction back on any error, and a batch cut short leaves it open until
-- the migration's session ends, which rolls it back (queue.MigrateUp).
SET XACT_ABORT ON;
BEGIN TRANSACTION;

ALTER TABLE dbo.readpast_tasks ADD unique_key nvarchar(128) NULL;

EXEC sp_executesql N'CREATE UNIQUE INDEX readpast_tasks_unique ON dbo.readpast_tasks (queue, unique_key)
    WHERE unique_key IS NOT NULL AND state IN (''pending'', ''running'');';

COMMIT TRANSACTION;
