-- Jobs (docs/JOBS.md): SQL Server Agent's jobs, a series of steps with an
-- action on success and on failure, and their runs. A job's plan is its steps
-- compiled by the jobs package (each action a step index, -1 quit with
-- success, -2 quit with failure); a run copies the plan it started with, so a
-- change of the job never changes a run under way. Each step execution is a
-- task carrying run_id and run_step.
--
-- A run follows its plan exactly once: the trigger readpast_step_ended runs
-- in the statement, so in the transaction, that ends a step task (a finish,
-- a reclaim of a lost lease, a transactional body's completion, a cancel),
-- and there enqueues the next step or ends the run. Nothing between two
-- steps is left for a node to do, so a node dying there can neither skip nor
-- double a step.
--
-- Lock order (the baseline's, extended): schedule row -> job row -> ...
-- task rows -> run row. The trigger takes the run's row after its task's;
-- CancelRun locks the run's current task before the run
-- (internal/queue/postgres/jobs.go); StartRun (Run now, or a fire of a job's
-- schedule after its schedule row) locks the job's row, and then only rows
-- it creates; DeleteJob deletes the job's schedules before the job.

CREATE TABLE readpast_jobs (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        text NOT NULL UNIQUE,
    description text NOT NULL DEFAULT '',
    category    text NOT NULL DEFAULT '',
    owner       text NOT NULL DEFAULT '',
    enabled     boolean NOT NULL DEFAULT true,
    queue       text NOT NULL,
    overlap     text NOT NULL DEFAULT 'skip' CHECK (overlap IN ('skip','allow')),
    definition  text NOT NULL,             -- the definition as given (JSON)
    version     bigint NOT NULL DEFAULT 1,
    last_run_id bigint,                    -- the latest run: the job list reads it by key
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    updated_by  text NOT NULL DEFAULT ''
);

-- A job's plan: 1 to 100 steps.
CREATE TABLE readpast_job_steps (
    job_id            bigint NOT NULL REFERENCES readpast_jobs (id) ON DELETE CASCADE,
    step_index        integer NOT NULL,
    name              text NOT NULL,
    body              text NOT NULL,
    target            text NOT NULL DEFAULT '',
    timeout_ms        bigint NOT NULL DEFAULT 0,
    transactional     boolean NOT NULL DEFAULT false,
    max_attempts      integer NOT NULL DEFAULT 1,
    retry_interval_ms bigint NOT NULL DEFAULT 0,
    on_success        integer NOT NULL,
    on_failure        integer NOT NULL,
    PRIMARY KEY (job_id, step_index)
);

CREATE TABLE readpast_job_runs (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id          bigint NOT NULL,       -- the job may be deleted since: job_name stays
    job_name        text NOT NULL,
    queue           text NOT NULL,
    state           text NOT NULL DEFAULT 'running'
                    CHECK (state IN ('running','succeeded','failed','cancelled')),
    trigger_kind    text NOT NULL,
    start_step      integer NOT NULL DEFAULT 0,
    created_by      text NOT NULL DEFAULT '',
    started_at      timestamptz NOT NULL DEFAULT now(),
    finished_at     timestamptz,
    steps_run       integer NOT NULL DEFAULT 1,
    current_step    integer NOT NULL,
    current_task_id bigint NOT NULL,
    reason          text NOT NULL DEFAULT ''
);
-- A job's runs, newest first, one keyset page at a time.
CREATE INDEX readpast_job_runs_job ON readpast_job_runs (job_id, id);
-- Retention finds ended runs by index.
CREATE INDEX readpast_job_runs_finished ON readpast_job_runs (finished_at) WHERE state <> 'running';

-- The plan a run started with.
CREATE TABLE readpast_run_steps (
    run_id            bigint NOT NULL REFERENCES readpast_job_runs (id) ON DELETE CASCADE,
    step_index        integer NOT NULL,
    name              text NOT NULL,
    body              text NOT NULL,
    target            text NOT NULL DEFAULT '',
    timeout_ms        bigint NOT NULL DEFAULT 0,
    transactional     boolean NOT NULL DEFAULT false,
    max_attempts      integer NOT NULL DEFAULT 1,
    retry_interval_ms bigint NOT NULL DEFAULT 0,
    on_success        integer NOT NULL,
    on_failure        integer NOT NULL,
    PRIMARY KEY (run_id, step_index)
);

-- A job's schedules are schedules that start a run of it (job_name) instead
-- of enqueueing their task.
ALTER TABLE readpast_schedules ADD COLUMN job_name text;

-- A step task: its run and plan index. A task's and a queue's wait before a
-- retry (queue.RetryPolicy): a fixed interval (cap NULL), or exponential from
-- the interval up to the cap; NULL: the queue's, else the default back-off. A
-- job step's retry interval is a fixed one.
ALTER TABLE readpast_tasks ADD COLUMN run_id bigint, ADD COLUMN run_step integer, ADD COLUMN retry_interval_ms bigint,
    ADD COLUMN retry_cap_ms bigint;
ALTER TABLE readpast_queues ADD COLUMN retry_interval_ms bigint, ADD COLUMN retry_cap_ms bigint;
-- A run's step executions in order (at most queue.MaxStepExecutions).
CREATE INDEX readpast_tasks_run ON readpast_tasks (run_id, id) WHERE run_id IS NOT NULL;

-- Enqueues plan step p_step of run p_run as a task of queue p_queue, as
-- readpast_enqueue would (the queue's row, the NOTIFY at commit), and returns
-- its id.
CREATE FUNCTION readpast_enqueue_step(p_run bigint, p_step integer, p_queue text, p_created_by text)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_id bigint;
BEGIN
    INSERT INTO readpast_queues (name) VALUES (p_queue) ON CONFLICT DO NOTHING;
    INSERT INTO readpast_tasks (queue, body, max_attempts, timeout_ms, transactional, created_by,
                                run_id, run_step, retry_interval_ms, target)
    SELECT p_queue, s.body, s.max_attempts, s.timeout_ms, s.transactional, p_created_by,
           p_run, p_step, nullif(s.retry_interval_ms, 0), s.target
      FROM readpast_run_steps s WHERE s.run_id = p_run AND s.step_index = p_step
    RETURNING id INTO v_id;
    IF v_id IS NULL THEN
        RAISE EXCEPTION 'run % has no step % in its plan', p_run, p_step;
    END IF;
    PERFORM pg_notify('readpast_enqueue', p_queue);
    RETURN v_id;
END
$$;

-- The end of a step task: queue.StepNext's rules, in the transaction of the
-- end. A run no longer running, or whose current step is another task (a
-- step retried by hand after its run moved on), is left alone.
CREATE FUNCTION readpast_step_ended() RETURNS trigger
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

CREATE TRIGGER readpast_step_ended AFTER UPDATE OF state ON readpast_tasks
    FOR EACH ROW
    WHEN (NEW.run_id IS NOT NULL AND NEW.state IN ('succeeded', 'failed', 'cancelled')
          AND OLD.state IN ('pending', 'running'))
    EXECUTE FUNCTION readpast_step_ended();

-- A retry's wait (queue.RetryWait): the end of an attempt with attempts left
-- put the task back with the default back-off (readpast_end_plain); a task
-- with a policy of its own, or on a queue with one, waits that instead
-- (queue.RetryPolicy.Wait: fixed, or doubling from the interval up to the
-- cap). A release (delayed false) is ready at once, as any task's. It reads
-- the queue's row by key, without a lock, only on a retry.
CREATE FUNCTION readpast_retry_at() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    v_interval bigint := NEW.retry_interval_ms;
    v_cap bigint := NEW.retry_cap_ms;
    v_wait numeric;
BEGIN
    IF v_interval IS NULL THEN
        SELECT q.retry_interval_ms, q.retry_cap_ms INTO v_interval, v_cap FROM readpast_queues q WHERE q.name = NEW.queue;
        IF v_interval IS NULL THEN
            RETURN NEW;
        END IF;
    END IF;
    v_wait := v_interval;
    IF v_cap IS NOT NULL THEN
        v_wait := least(v_cap, v_interval * power(2::numeric, least(greatest(NEW.attempts - NEW.retry_base, 1), 40) - 1));
    END IF;
    NEW.available_at := now() + v_wait * interval '1 millisecond';
    RETURN NEW;
END
$$;

CREATE TRIGGER readpast_retry_at BEFORE UPDATE OF state ON readpast_tasks
    FOR EACH ROW
    WHEN (OLD.state = 'running' AND NEW.state = 'pending' AND NEW.delayed)
    EXECUTE FUNCTION readpast_retry_at();

-- readpast_pin_functions as in migration 000003, with the functions above.
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
