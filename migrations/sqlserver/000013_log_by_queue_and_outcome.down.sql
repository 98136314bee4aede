-- All or nothing, as the up migration.
SET XACT_ABORT ON;
BEGIN TRANSACTION;

CREATE INDEX readpast_attempts_queue ON dbo.readpast_attempts (queue, id);
DROP INDEX readpast_attempts_list ON dbo.readpast_attempts;

COMMIT TRANSACTION;
