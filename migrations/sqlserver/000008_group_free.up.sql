-- A claim finds the groups that may admit a task through the groups that have
-- a free slot, not through every group that has ready tasks (docs/QUEUE.md,
-- "Claiming behind a backlog"; sql_claim.go). has_free is running <
-- max_running, kept by every statement that changes either (the claim's
-- admission, the finish's decrement, the limit's change), and
-- readpast_groups_free holds only the rows where it is 1: a full group is not
-- in the index, so 10,000 full groups cost a claim nothing. A filtered index
-- cannot compare two columns, nor name a computed column, hence the column.
--
-- What it holds: readpast_groups is small (a row per concurrency group), and
-- the file is one short transaction; the column's addition holds a
-- schema-modification lock on the table until the commit, so claims and
-- finishes of grouped tasks wait for it. The index is built online where the
-- edition allows it; an offline build blocks every claim and finish that
-- reads or writes readpast_groups (an S lock for the whole build) on Standard
-- and Express, for as long as a build of a table this size takes.

-- All or nothing: golang-migrate sends the file as one batch; XACT_ABORT rolls
-- the transaction back on any error, and a batch cut short leaves it open until
-- the migration's session ends, which rolls it back (migrations.Up).
SET XACT_ABORT ON;
BEGIN TRANSACTION;

ALTER TABLE dbo.readpast_groups ADD has_free bit NOT NULL
    CONSTRAINT readpast_groups_has_free_df DEFAULT 1;

-- The batch was compiled before the column existed: what names it runs as a
-- batch of its own.
DECLARE @online nvarchar(20) = CASE WHEN CAST(SERVERPROPERTY('EngineEdition') AS int) IN (3, 5, 8)
                                    THEN N'ONLINE = ON' ELSE N'ONLINE = OFF' END;
EXEC (N'UPDATE dbo.readpast_groups
SET has_free = CASE WHEN running < max_running THEN 1 ELSE 0 END;

CREATE INDEX readpast_groups_free ON dbo.readpast_groups (name)
    INCLUDE (max_running, running) WHERE has_free = 1 WITH (' + @online + N');');

COMMIT TRANSACTION;
