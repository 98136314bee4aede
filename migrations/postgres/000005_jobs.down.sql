-- Back to migration 000003 (000004 is another change's): the jobs' tables,
-- triggers and functions gone, and readpast_pin_functions' list as 000003
-- left it.
DROP TRIGGER readpast_retry_at ON readpast_tasks;
DROP TRIGGER readpast_step_ended ON readpast_tasks;
DROP FUNCTION readpast_retry_at();
DROP FUNCTION readpast_step_ended();
DROP FUNCTION readpast_enqueue_step(bigint, integer, text, text);
DROP INDEX readpast_tasks_run;
ALTER TABLE readpast_schedules DROP COLUMN job_name;
ALTER TABLE readpast_tasks DROP COLUMN run_id, DROP COLUMN run_step, DROP COLUMN retry_interval_ms, DROP COLUMN retry_cap_ms;
ALTER TABLE readpast_queues DROP COLUMN retry_interval_ms, DROP COLUMN retry_cap_ms;
DROP TABLE readpast_run_steps;
DROP TABLE readpast_job_runs;
DROP TABLE readpast_job_steps;
DROP TABLE readpast_jobs;

CREATE OR REPLACE FUNCTION readpast_pin_functions() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN SELECT p.oid::regprocedure FROM pg_proc p
              WHERE p.pronamespace = current_schema()::regnamespace
                AND p.proname IN ('readpast_claim', 'readpast_enqueue', 'readpast_end_attempts',
                                  'readpast_cancel', 'readpast_retry', 'readpast_mark_committed',
                                  'readpast_release_uncounted') LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = %I, pg_temp', f, current_schema());
    END LOOP;
END
$$;

SELECT readpast_pin_functions();
