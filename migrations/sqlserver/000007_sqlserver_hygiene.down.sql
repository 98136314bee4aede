-- All or nothing (see the up migration).
SET XACT_ABORT ON;
BEGIN TRANSACTION;

-- Babelfish has neither (see the up migration), and refuses LOCK_ESCALATION =
-- TABLE although it accepts DISABLE.
IF CHARINDEX(N'Babelfish', @@VERSION) = 0
    EXEC (N'ALTER TABLE dbo.readpast_attempts SET (LOCK_ESCALATION = TABLE);
EXEC sp_tableoption N''dbo.readpast_tasks'', ''large value types out of row'', 0;');

COMMIT TRANSACTION;
