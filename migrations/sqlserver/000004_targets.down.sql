SET XACT_ABORT ON;
BEGIN TRANSACTION;

-- The default constraints go before their columns (SQL Server refuses to
-- drop a column a constraint depends on). Babelfish keeps a column's
-- default on the column itself, with no constraint object to drop: the IF
-- finds none there.
IF OBJECT_ID(N'dbo.readpast_schedules_target_df', N'D') IS NOT NULL
    ALTER TABLE dbo.readpast_schedules DROP CONSTRAINT readpast_schedules_target_df;
ALTER TABLE dbo.readpast_schedules DROP COLUMN target;
IF OBJECT_ID(N'dbo.readpast_queues_default_target_df', N'D') IS NOT NULL
    ALTER TABLE dbo.readpast_queues DROP CONSTRAINT readpast_queues_default_target_df;
ALTER TABLE dbo.readpast_queues DROP COLUMN default_target;
IF OBJECT_ID(N'dbo.readpast_tasks_target_df', N'D') IS NOT NULL
    ALTER TABLE dbo.readpast_tasks DROP CONSTRAINT readpast_tasks_target_df;
ALTER TABLE dbo.readpast_tasks DROP COLUMN target;

COMMIT TRANSACTION;
