-- Back to migration 000012: readpast_step_ended as 000005 made it, the
-- fan-out's function and columns gone, readpast_pin_functions' list as 000005
-- left it.
CREATE OR REPLACE FUNCTION readpast_step_ended() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    r readpast_job_runs;
    s readpast_run_steps;
    v_next integer;
    v_end text;
    v_reason text;
BEGIN
    SELECT * INTO r FROM readpast_job_runs
     WHERE id = NEW.run_id AND state = 'running' AND current_task_id = NEW.id FOR UPDATE;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    SELECT * INTO s FROM readpast_run_steps WHERE run_id = NEW.run_id AND step_index = NEW.run_step;
    IF NEW.state = 'cancelled' THEN
        v_end := 'cancelled';
        v_reason := 'step ' || s.name || ' was cancelled';
    ELSE
        v_next := CASE WHEN NEW.state = 'succeeded' THEN s.on_success ELSE s.on_failure END;
        IF v_next = -1 THEN
            v_end := 'succeeded';
            v_reason := 'step ' || s.name || ' ' || NEW.state || ': quit reporting success';
        ELSIF v_next = -2 THEN
            v_end := 'failed';
            v_reason := 'step ' || s.name || ' ' || NEW.state || ': quit reporting failure';
        ELSIF r.steps_run >= 1000 THEN -- queue.MaxStepExecutions
            v_end := 'failed';
            v_reason := 'stopped after 1000 step executions: the flow''s go-to actions loop without reaching a quit';
        END IF;
    END IF;
    IF v_end IS NOT NULL THEN
        UPDATE readpast_job_runs SET state = v_end, finished_at = now(), reason = v_reason WHERE id = r.id;
    ELSE
        UPDATE readpast_job_runs
           SET steps_run = steps_run + 1, current_step = v_next,
               current_task_id = readpast_enqueue_step(r.id, v_next, r.queue, 'job:' || r.job_name)
         WHERE id = r.id;
    END IF;
    RETURN NULL;
END
$$;

DROP FUNCTION readpast_enqueue_fanout(bigint, integer, text, text, integer);
ALTER TABLE readpast_job_runs DROP COLUMN fanout_left, DROP COLUMN fanout_failed;
ALTER TABLE readpast_run_steps DROP COLUMN targets, DROP COLUMN fanout_limit;
ALTER TABLE readpast_job_steps DROP COLUMN targets, DROP COLUMN fanout_limit;

CREATE OR REPLACE FUNCTION readpast_pin_functions() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN SELECT p.oid::regprocedure FROM pg_proc p
              WHERE p.pronamespace = current_schema()::regnamespace
                AND p.proname IN ('readpast_claim', 'readpast_enqueue', 'readpast_end_attempts',
                                  'readpast_cancel', 'readpast_retry', 'readpast_mark_committed',
                                  'readpast_release_uncounted', 'readpast_enqueue_step',
                                  'readpast_step_ended', 'readpast_retry_at') LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = %I, pg_temp', f, current_schema());
    END LOOP;
END
$$;

SELECT readpast_pin_functions();
