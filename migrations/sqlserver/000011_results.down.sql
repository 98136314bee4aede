-- Back to version 10: the result output and the queues' setting gone. SQL
-- Server keeps a column's default as a named constraint, dropped first;
-- Babelfish keeps it with the column and has no such object, hence the check.
SET XACT_ABORT ON;
BEGIN TRANSACTION;

DROP TABLE dbo.readpast_results;
IF OBJECT_ID(N'dbo.readpast_queues_result_rows_df', N'D') IS NOT NULL
    ALTER TABLE dbo.readpast_queues DROP CONSTRAINT readpast_queues_result_rows_df;
ALTER TABLE dbo.readpast_queues DROP COLUMN result_rows;

COMMIT TRANSACTION;
