-- A node's claim reads one index range per target it serves (docs/TARGETS.md,
-- "Flat behind another target's backlog"; SPEC §9): the ready indexes put the
-- target right after the queue, so the ready tasks of a target the node does
-- not serve are never read (nor locked), however many are ahead of its own.
-- Until now the target was a residual predicate, and a claim read past every
-- ready task of other targets ahead of its own in claim order. The new
-- indexes have names of their own and are built before the old ones are
-- dropped, so claims of the running binary keep their index during the build.
--
-- What it holds: both indexes are filtered to ready tasks, so a build reads
-- the table once and writes an entry per ready task, never history. They are
-- built online where the edition allows it; an offline build blocks every
-- enqueue, claim and finish (an S lock on readpast_tasks for the whole build)
-- on Standard and Express, for as long as a build of a table this size takes.
-- The drops take a schema-modification lock on the table until the commit,
-- which claims and finishes wait for, briefly.

-- All or nothing: golang-migrate sends the file as one batch; XACT_ABORT rolls
-- the transaction back on any error, and a batch cut short leaves it open until
-- the migration's session ends, which rolls it back (migrations.Up).
SET XACT_ABORT ON;
BEGIN TRANSACTION;

DECLARE @online nvarchar(20) = CASE WHEN CAST(SERVERPROPERTY('EngineEdition') AS int) IN (3, 5, 8)
                                    THEN N'ONLINE = ON' ELSE N'ONLINE = OFF' END;
EXEC (N'CREATE INDEX readpast_tasks_ready_target ON dbo.readpast_tasks (queue, target, priority, available_at, id)
    WHERE state = ''pending'' AND chain_wait = 0 AND delayed = 0 AND group_name IS NULL WITH (' + @online + N');
CREATE INDEX readpast_tasks_ready_grouped_target ON dbo.readpast_tasks (queue, target, group_name, priority, available_at, id)
    WHERE state = ''pending'' AND chain_wait = 0 AND delayed = 0 AND group_name IS NOT NULL WITH (' + @online + N');');

DROP INDEX readpast_tasks_ready ON dbo.readpast_tasks;
DROP INDEX readpast_tasks_ready_grouped ON dbo.readpast_tasks;

COMMIT TRANSACTION;
