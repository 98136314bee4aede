SET XACT_ABORT ON;
BEGIN TRANSACTION;

IF OBJECT_ID(N'dbo.readpast_schedules_fanout_limit_df', N'D') IS NOT NULL
    ALTER TABLE dbo.readpast_schedules DROP CONSTRAINT readpast_schedules_fanout_limit_df;
ALTER TABLE dbo.readpast_schedules DROP COLUMN fanout_limit;
IF OBJECT_ID(N'dbo.readpast_schedules_targets_df', N'D') IS NOT NULL
    ALTER TABLE dbo.readpast_schedules DROP CONSTRAINT readpast_schedules_targets_df;
ALTER TABLE dbo.readpast_schedules DROP COLUMN targets;

COMMIT TRANSACTION;
