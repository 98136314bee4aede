-- Jobs (docs/JOBS.md): SQL Server Agent's jobs, a series of steps with an
-- action on success and on failure, and their runs. A job's plan is its steps
-- compiled by the jobs package (the actions as step indexes, -1 quit with
-- success, -2 quit with failure); a run copies the plan it started with, so
-- a change of the job never changes a run under way. Each step execution is
-- a task carrying run_id and run_step; the transaction that records a step
-- task's end follows the run's plan to the next step (internal/queue/sqlite/
-- jobs_step.go).
CREATE TABLE readpast_jobs (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    name        TEXT NOT NULL UNIQUE,
    description TEXT NOT NULL DEFAULT '',
    category    TEXT NOT NULL DEFAULT '',
    owner       TEXT NOT NULL DEFAULT '',
    enabled     INTEGER NOT NULL DEFAULT 1,
    queue       TEXT NOT NULL,
    overlap     TEXT NOT NULL DEFAULT 'skip' CHECK (overlap IN ('skip','allow')),
    definition  TEXT NOT NULL,              -- the definition as given (JSON)
    version     INTEGER NOT NULL DEFAULT 1,
    last_run_id INTEGER,                    -- the latest run: the job list reads it by key
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    updated_by  TEXT NOT NULL DEFAULT ''
);

-- A job's plan: 1 to 100 steps.
CREATE TABLE readpast_job_steps (
    job_id            INTEGER NOT NULL REFERENCES readpast_jobs (id) ON DELETE CASCADE,
    step_index        INTEGER NOT NULL,
    name              TEXT NOT NULL,
    body              TEXT NOT NULL,
    target            TEXT NOT NULL DEFAULT '',
    timeout_ms        INTEGER NOT NULL DEFAULT 0,
    transactional     INTEGER NOT NULL DEFAULT 0,
    max_attempts      INTEGER NOT NULL DEFAULT 1,
    retry_interval_ms INTEGER NOT NULL DEFAULT 0,
    on_success        INTEGER NOT NULL,
    on_failure        INTEGER NOT NULL,
    PRIMARY KEY (job_id, step_index)
);

-- Runs. A running run's current step is one task (current_task_id); the run
-- ends in the transaction that ends its last step.
CREATE TABLE readpast_job_runs (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id          INTEGER NOT NULL,       -- the job may be deleted since: job_name stays
    job_name        TEXT NOT NULL,
    queue           TEXT NOT NULL,
    state           TEXT NOT NULL DEFAULT 'running'
                    CHECK (state IN ('running','succeeded','failed','cancelled')),
    trigger_kind    TEXT NOT NULL,
    start_step      INTEGER NOT NULL DEFAULT 0,
    created_by      TEXT NOT NULL DEFAULT '',
    started_at      INTEGER NOT NULL,
    finished_at     INTEGER,
    steps_run       INTEGER NOT NULL DEFAULT 1,
    current_step    INTEGER NOT NULL,
    current_task_id INTEGER NOT NULL,
    reason          TEXT NOT NULL DEFAULT ''
);
-- A job's runs, newest first, one keyset page at a time.
CREATE INDEX readpast_job_runs_job ON readpast_job_runs (job_id, id);
-- Retention finds ended runs by index.
CREATE INDEX readpast_job_runs_finished ON readpast_job_runs (finished_at) WHERE state <> 'running';

-- The plan a run started with.
CREATE TABLE readpast_run_steps (
    run_id            INTEGER NOT NULL REFERENCES readpast_job_runs (id) ON DELETE CASCADE,
    step_index        INTEGER NOT NULL,
    name              TEXT NOT NULL,
    body              TEXT NOT NULL,
    target            TEXT NOT NULL DEFAULT '',
    timeout_ms        INTEGER NOT NULL DEFAULT 0,
    transactional     INTEGER NOT NULL DEFAULT 0,
    max_attempts      INTEGER NOT NULL DEFAULT 1,
    retry_interval_ms INTEGER NOT NULL DEFAULT 0,
    on_success        INTEGER NOT NULL,
    on_failure        INTEGER NOT NULL,
    PRIMARY KEY (run_id, step_index)
);

-- A job's schedules are schedules that start a run of it (job_name) instead
-- of enqueueing their task.
ALTER TABLE readpast_schedules ADD COLUMN job_name TEXT;

-- A step task: its run and plan index.
ALTER TABLE readpast_tasks ADD COLUMN run_id INTEGER;
ALTER TABLE readpast_tasks ADD COLUMN run_step INTEGER;
-- A task's and a queue's wait before a retry (queue.RetryPolicy): a fixed
-- interval (cap NULL), or exponential from the interval up to the cap; NULL:
-- the queue's, else the default back-off. A job step's retry interval is a
-- fixed one.
ALTER TABLE readpast_tasks ADD COLUMN retry_interval_ms INTEGER;
ALTER TABLE readpast_tasks ADD COLUMN retry_cap_ms INTEGER;
ALTER TABLE readpast_queues ADD COLUMN retry_interval_ms INTEGER;
ALTER TABLE readpast_queues ADD COLUMN retry_cap_ms INTEGER;
-- A run's step executions in order (at most MaxStepExecutions).
CREATE INDEX readpast_tasks_run ON readpast_tasks (run_id, id) WHERE run_id IS NOT NULL;
