SET XACT_ABORT ON;
BEGIN TRANSACTION;

IF OBJECT_ID(N'dbo.readpast_job_runs_fanout_failed_df', N'D') IS NOT NULL
    ALTER TABLE dbo.readpast_job_runs DROP CONSTRAINT readpast_job_runs_fanout_failed_df;
ALTER TABLE dbo.readpast_job_runs DROP COLUMN fanout_failed;
IF OBJECT_ID(N'dbo.readpast_job_runs_fanout_left_df', N'D') IS NOT NULL
    ALTER TABLE dbo.readpast_job_runs DROP CONSTRAINT readpast_job_runs_fanout_left_df;
ALTER TABLE dbo.readpast_job_runs DROP COLUMN fanout_left;
IF OBJECT_ID(N'dbo.readpast_run_steps_fanout_limit_df', N'D') IS NOT NULL
    ALTER TABLE dbo.readpast_run_steps DROP CONSTRAINT readpast_run_steps_fanout_limit_df;
ALTER TABLE dbo.readpast_run_steps DROP COLUMN fanout_limit;
IF OBJECT_ID(N'dbo.readpast_run_steps_targets_df', N'D') IS NOT NULL
    ALTER TABLE dbo.readpast_run_steps DROP CONSTRAINT readpast_run_steps_targets_df;
ALTER TABLE dbo.readpast_run_steps DROP COLUMN targets;
IF OBJECT_ID(N'dbo.readpast_job_steps_fanout_limit_df', N'D') IS NOT NULL
    ALTER TABLE dbo.readpast_job_steps DROP CONSTRAINT readpast_job_steps_fanout_limit_df;
ALTER TABLE dbo.readpast_job_steps DROP COLUMN fanout_limit;
IF OBJECT_ID(N'dbo.readpast_job_steps_targets_df', N'D') IS NOT NULL
    ALTER TABLE dbo.readpast_job_steps DROP CONSTRAINT readpast_job_steps_targets_df;
ALTER TABLE dbo.readpast_job_steps DROP COLUMN targets;

COMMIT TRANSACTION;
