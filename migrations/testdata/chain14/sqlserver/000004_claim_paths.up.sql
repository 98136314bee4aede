-- The claim's paths behind a backlog (docs/QUEUE.md, "Claiming behind a
-- backlog"): a pending task whose available_at is ahead is delayed and out of
-- the claim's indexes until due; ungrouped and grouped ready tasks have filtered
-- indexes of their own; retention reads finished tasks by finished_at.
-- golang-migrate runs this file as one batch: a column added here cannot be
-- named by a later statement of the same batch at compile time, so the
-- statements that use it go through sp_executesql.

-- All or nothing: golang-migrate sends the file as one batch; XACT_ABORT rolls
-- the transaction back on any error, and a batch cut short leaves it open until
-- the migration's session ends, which rolls it back (queue.MigrateUp).
SET XACT_ABORT ON;
BEGIN TRANSACTION;

ALTER TABLE dbo.readpast_tasks ADD delayed bit NOT NULL CONSTRAINT readpast_tasks_delayed_df DEFAULT 0;

EXEC sp_executesql N'UPDATE dbo.readpast_tasks SET delayed = 1
WHERE state = ''pending'' AND available_at > SYSUTCDATETIME();';

DROP INDEX readpast_tasks_claim ON dbo.readpast_tasks;

EXEC sp_executesql N'CREATE INDEX readpast_tasks_ready ON dbo.readpast_tasks (queue, priority, available_at, id)
    WHERE state = ''pending'' AND chain_wait = 0 AND delayed = 0 AND group_name IS NULL;
CREATE INDEX readpast_tasks_ready_grouped ON dbo.readpast_tasks (queue, group_name, priority, available_at, id)
    WHERE state = ''pending'' AND chain_wait = 0 AND delayed = 0 AND group_name IS NOT NULL;
CREATE INDEX readpast_tasks_delayed ON dbo.readpast_tasks (queue, available_at)
    WHERE state = ''pending'' AND delayed = 1;
CREATE INDEX readpast_tasks_finished ON dbo.readpast_tasks (finished_at)
    WHERE state IN (''succeeded'', ''failed'', ''cancelled'');';

COMMIT TRANSACTION;
