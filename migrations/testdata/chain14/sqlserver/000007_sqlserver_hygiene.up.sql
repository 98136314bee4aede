-- SQL Server's own housekeeping (docs/SQLSERVER.md, "Lock hygiene"); the other
-- dialects have nothing to change at this version.
--
-- * Task bodies (nvarchar(max), up to the body limit) are stored out of row, so
--   the clustered index that every claim, finish and heartbeat walks by key
--   holds only the narrow columns: more rows per page, fewer pages read and
--   locked. Bodies already in row move out when next written.
-- * The execution log never escalates to a table lock: a purge deletes in
--   batches of at most 2,000 rows, and a table lock taken by one would stop
--   every finisher's insert into the log until the purge commits.

-- All or nothing: golang-migrate sends the file as one batch; XACT_ABORT rolls
-- the transaction back on any error, and a batch cut short leaves it open until
-- the migration's session ends, which rolls it back (queue.MigrateUp).
SET XACT_ABORT ON;
BEGIN TRANSACTION;

-- Babelfish for PostgreSQL has no sp_tableoption (PostgreSQL stores large
-- values out of line by itself): the call runs on SQL Server only, through
-- dynamic SQL so that Babelfish never parses it.
IF CHARINDEX(N'Babelfish', @@VERSION) = 0
    EXEC (N'EXEC sp_tableoption N''dbo.readpast_tasks'', ''large value types out of row'', 1;');
ALTER TABLE dbo.readpast_attempts SET (LOCK_ESCALATION = DISABLE);

COMMIT TRANSACTION;
