SET XACT_ABORT ON;
BEGIN TRANSACTION;
DROP TABLE dbo.readpast_results;
ALTER TABLE dbo.readpast_queues DROP CONSTRAINT readpast_queues_result_rows_df;
ALTER TABLE dbo.readpast_queues DROP COLUMN result_rows;
COMMIT TRANSACTION;
