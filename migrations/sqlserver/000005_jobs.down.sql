SET XACT_ABORT ON;
BEGIN TRANSACTION;
DROP INDEX readpast_tasks_run ON dbo.readpast_tasks;
ALTER TABLE dbo.readpast_tasks DROP COLUMN run_id, run_step, retry_interval_ms;
DROP TABLE dbo.readpast_run_steps;
DROP TABLE dbo.readpast_job_runs;
DROP TABLE dbo.readpast_job_steps;
DROP TABLE dbo.readpast_jobs;
COMMIT TRANSACTION;
