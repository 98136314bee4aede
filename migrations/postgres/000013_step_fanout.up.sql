-- A job step may fan out (docs/JOBS.md, "A step that fans out"): a job's
-- step keeps its selectors (names and tag:NAME, space-separated), a run's
-- step the target names they resolved to when the run started, and
-- fanout_limit how many run at once (0: all). The run row counts the current
-- fan-out's unfinished and failed tasks: each task's end decrements them in
-- readpast_step_ended, in the transaction that records it, after taking the
-- run row FOR UPDATE (after the task's row, the lock order of 000005), so two
-- last ends on two nodes are serialised and the one that brings fanout_left
-- to zero follows the plan, once. Columns with a constant default: no row is
-- rewritten.
ALTER TABLE readpast_job_steps ADD COLUMN targets text NOT NULL DEFAULT '',
    ADD COLUMN fanout_limit integer NOT NULL DEFAULT 0;
ALTER TABLE readpast_run_steps ADD COLUMN targets text NOT NULL DEFAULT '',
    ADD COLUMN fanout_limit integer NOT NULL DEFAULT 0;
ALTER TABLE readpast_job_runs ADD COLUMN fanout_left integer NOT NULL DEFAULT 0,
    ADD COLUMN fanout_failed integer NOT NULL DEFAULT 0;

-- Enqueues plan step p_step of run p_run, which fans out, as its execution
-- number p_exec: one task per target of the run's plan, in the new group
-- fanout-run<run>-<exec> (queue.FanOutStepGroup) with the step's limit, and
-- sets the run's counters. Returns the first task's id (current_task_id: the
-- step's tasks are the run's tasks of the step from it on).
CREATE FUNCTION readpast_enqueue_fanout(p_run bigint, p_step integer, p_queue text, p_created_by text, p_exec integer)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    s readpast_run_steps;
    v_targets text[];
    v_n integer;
    v_group text := 'fanout-run' || p_run || '-' || p_exec;
    v_id bigint;
BEGIN
    SELECT * INTO s FROM readpast_run_steps WHERE run_id = p_run AND step_index = p_step;
    v_targets := string_to_array(s.targets, ' ');
    v_n := coalesce(cardinality(v_targets), 0);
    IF v_n = 0 THEN
        RAISE EXCEPTION 'run % step % fans out to no target', p_run, p_step;
    END IF;
    INSERT INTO readpast_queues (name) VALUES (p_queue) ON CONFLICT DO NOTHING;
    INSERT INTO readpast_groups (name, max_running, updated_by)
    VALUES (v_group, CASE WHEN s.fanout_limit BETWEEN 1 AND v_n THEN s.fanout_limit ELSE v_n END, p_created_by);
    WITH ins AS (
        INSERT INTO readpast_tasks (queue, body, max_attempts, timeout_ms, transactional, created_by,
                                    run_id, run_step, retry_interval_ms, target, group_name)
        SELECT p_queue, s.body, s.max_attempts, s.timeout_ms, s.transactional, p_created_by,
               p_run, p_step, nullif(s.retry_interval_ms, 0), t.name, v_group
          FROM unnest(v_targets) WITH ORDINALITY AS t(name, n) ORDER BY t.n
        RETURNING id)
    SELECT min(id) INTO v_id FROM ins;
    UPDATE readpast_job_runs SET fanout_left = v_n, fanout_failed = 0 WHERE id = p_run;
    PERFORM pg_notify('readpast_enqueue', p_queue);
    RETURN v_id;
END
$$;

-- The end of a step task: queue.StepNext's rules, in the transaction of the
-- end. A run no longer running, or whose current step is another task (a
-- step retried by hand after its run moved on), is left alone. While the
-- current step fans out (fanout_left > 0), its tasks are the run's tasks of
-- that step from current_task_id on: each end is counted (a cancelled or
-- failed task as failed), and the last one follows the plan with the step
-- succeeded when none failed.
CREATE OR REPLACE FUNCTION readpast_step_ended() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    r readpast_job_runs;
    s readpast_run_steps;
    v_state text := NEW.state;
    v_next integer;
    v_end text;
    v_reason text;
    v_task bigint;
BEGIN
    SELECT * INTO r FROM readpast_job_runs WHERE id = NEW.run_id AND state = 'running' FOR UPDATE;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    IF r.fanout_left > 0 THEN
        IF NEW.run_step <> r.current_step OR NEW.id < r.current_task_id THEN
            RETURN NULL;
        END IF;
        r.fanout_left := r.fanout_left - 1;
        IF NEW.state <> 'succeeded' THEN
            r.fanout_failed := r.fanout_failed + 1;
        END IF;
        UPDATE readpast_job_runs SET fanout_left = r.fanout_left, fanout_failed = r.fanout_failed WHERE id = r.id;
        IF r.fanout_left > 0 THEN
            RETURN NULL;
        END IF;
        v_state := CASE WHEN r.fanout_failed > 0 THEN 'failed' ELSE 'succeeded' END;
    ELSIF r.current_task_id <> NEW.id THEN
        RETURN NULL;
    END IF;
    SELECT * INTO s FROM readpast_run_steps WHERE run_id = NEW.run_id AND step_index = NEW.run_step;
    IF v_state = 'cancelled' THEN
        v_end := 'cancelled';
        v_reason := 'step ' || s.name || ' was cancelled';
    ELSE
        v_next := CASE WHEN v_state = 'succeeded' THEN s.on_success ELSE s.on_failure END;
        IF v_next = -1 THEN
            v_end := 'succeeded';
            v_reason := 'step ' || s.name || ' ' || v_state || ': quit reporting success';
        ELSIF v_next = -2 THEN
            v_end := 'failed';
            v_reason := 'step ' || s.name || ' ' || v_state || ': quit reporting failure';
        ELSIF r.steps_run >= 1000 THEN -- queue.MaxStepExecutions
            v_end := 'failed';
            v_reason := 'stopped after 1000 step executions: the flow''s go-to actions loop without reaching a quit';
        END IF;
    END IF;
    IF v_end IS NOT NULL THEN
        UPDATE readpast_job_runs SET state = v_end, finished_at = now(), reason = v_reason WHERE id = r.id;
    ELSE
        IF (SELECT n.targets <> '' FROM readpast_run_steps n WHERE n.run_id = r.id AND n.step_index = v_next) THEN
            v_task := readpast_enqueue_fanout(r.id, v_next, r.queue, 'job:' || r.job_name, r.steps_run + 1);
        ELSE
            v_task := readpast_enqueue_step(r.id, v_next, r.queue, 'job:' || r.job_name);
        END IF;
        UPDATE readpast_job_runs SET steps_run = steps_run + 1, current_step = v_next, current_task_id = v_task
         WHERE id = r.id;
    END IF;
    RETURN NULL;
END
$$;

-- readpast_pin_functions as in migration 000005, with the function above.
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
                                  'readpast_step_ended', 'readpast_retry_at',
                                  'readpast_enqueue_fanout') LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = %I, pg_temp', f, current_schema());
    END LOOP;
END
$$;

SELECT readpast_pin_functions();
