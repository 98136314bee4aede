-- A job step may fan out (docs/JOBS.md, "A step that fans out"): a job's
-- step keeps its selectors (names and tag:NAME, space-separated), a run's
-- step the target names they resolved to when the run started, and
-- fanout_limit how many run at once (0: all). The run row counts the current
-- fan-out's unfinished and failed tasks: each task's end decrements them in
-- the transaction that records it, and the end that brings fanout_left to
-- zero follows the plan (internal/queue/sqlite/jobs_step.go).
ALTER TABLE readpast_job_steps ADD COLUMN targets TEXT NOT NULL DEFAULT '';
ALTER TABLE readpast_job_steps ADD COLUMN fanout_limit INTEGER NOT NULL DEFAULT 0;
ALTER TABLE readpast_run_steps ADD COLUMN targets TEXT NOT NULL DEFAULT '';
ALTER TABLE readpast_run_steps ADD COLUMN fanout_limit INTEGER NOT NULL DEFAULT 0;
ALTER TABLE readpast_job_runs ADD COLUMN fanout_left INTEGER NOT NULL DEFAULT 0;
ALTER TABLE readpast_job_runs ADD COLUMN fanout_failed INTEGER NOT NULL DEFAULT 0;
