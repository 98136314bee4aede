SET XACT_ABORT ON;
BEGIN TRANSACTION;

-- A job step may fan out (docs/JOBS.md, "A step that fans out"): a job's
-- step keeps its selectors (names and tag:NAME, space-separated), a run's
-- step the target names they resolved to when the run started (up to 1000),
-- and fanout_limit how many run at once (0: all). The run row counts the
-- current fan-out's unfinished and failed tasks: each task's end decrements
-- them in the transaction that records it, under the run row's lock, and the
-- end that brings fanout_left to zero follows the plan (stepFollow). NOT NULL
-- with a constant default: a metadata-only change, no row is rewritten
-- (ALTER TABLE, "Adding NOT NULL columns as an online operation").
ALTER TABLE dbo.readpast_job_steps ADD targets nvarchar(max) NOT NULL
    CONSTRAINT readpast_job_steps_targets_df DEFAULT N'';
ALTER TABLE dbo.readpast_job_steps ADD fanout_limit int NOT NULL
    CONSTRAINT readpast_job_steps_fanout_limit_df DEFAULT 0;
ALTER TABLE dbo.readpast_run_steps ADD targets nvarchar(max) NOT NULL
    CONSTRAINT readpast_run_steps_targets_df DEFAULT N'';
ALTER TABLE dbo.readpast_run_steps ADD fanout_limit int NOT NULL
    CONSTRAINT readpast_run_steps_fanout_limit_df DEFAULT 0;
ALTER TABLE dbo.readpast_job_runs ADD fanout_left int NOT NULL
    CONSTRAINT readpast_job_runs_fanout_left_df DEFAULT 0;
ALTER TABLE dbo.readpast_job_runs ADD fanout_failed int NOT NULL
    CONSTRAINT readpast_job_runs_fanout_failed_df DEFAULT 0;

COMMIT TRANSACTION;
