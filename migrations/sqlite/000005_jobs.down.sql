DROP INDEX readpast_tasks_run;
ALTER TABLE readpast_schedules DROP COLUMN job_name;
ALTER TABLE readpast_tasks DROP COLUMN retry_interval_ms;
ALTER TABLE readpast_tasks DROP COLUMN run_step;
ALTER TABLE readpast_tasks DROP COLUMN run_id;
DROP TABLE readpast_run_steps;
DROP TABLE readpast_job_runs;
DROP TABLE readpast_job_steps;
DROP TABLE readpast_jobs;
