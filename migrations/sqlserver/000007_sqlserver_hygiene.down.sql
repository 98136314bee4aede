-- All or nothing (see the up migration).
SET XACT_ABORT ON;
BEGIN TRANSACTION;

ALTER TABLE dbo.readpast_attempts SET (LOCK_ESCALATION = TABLE);
IF CHARINDEX(N'Babelfish', @@VERSION) = 0
    EXEC (N'EXEC sp_tableoption N''dbo.readpast_tasks'', ''large value types out of row'', 0;');

COMMIT TRANSACTION;
