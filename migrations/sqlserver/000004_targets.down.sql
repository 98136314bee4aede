SET XACT_ABORT ON;
BEGIN TRANSACTION;

ALTER TABLE dbo.readpast_queues DROP CONSTRAINT readpast_queues_default_target_df;
ALTER TABLE dbo.readpast_queues DROP COLUMN default_target;
ALTER TABLE dbo.readpast_tasks DROP CONSTRAINT readpast_tasks_target_df;
ALTER TABLE dbo.readpast_tasks DROP COLUMN target;

COMMIT TRANSACTION;
