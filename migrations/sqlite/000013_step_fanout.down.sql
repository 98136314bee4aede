ALTER TABLE readpast_job_runs DROP COLUMN fanout_failed;
ALTER TABLE readpast_job_runs DROP COLUMN fanout_left;
ALTER TABLE readpast_run_steps DROP COLUMN fanout_limit;
ALTER TABLE readpast_run_steps DROP COLUMN targets;
ALTER TABLE readpast_job_steps DROP COLUMN fanout_limit;
ALTER TABLE readpast_job_steps DROP COLUMN targets;
