-- Schedules (docs/SCHEDULES.md): a cron expression in a time zone and the
-- template of the task each fire creates.
--
-- Exactly once without a leader: a fire is one transaction that moves the
-- schedule's row from the version its scheduler read to the next one and
-- creates the task; a second scheduler with the same plan skips the row while
-- the first holds it (SKIP LOCKED) and finds the version gone after. The row
-- keeps only the latest fire and run, so nothing here grows with history.
--
-- Lock order: a transaction that locks a schedule row locks it first, before
-- the rows readpast_enqueue takes (queues, chains, tasks, groups), and nothing
-- else locks schedule rows, so schedules add no cycle to migration 1's order.
CREATE TABLE readpast_schedules (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name              text NOT NULL UNIQUE,
    cron              text NOT NULL,
    time_zone         text NOT NULL DEFAULT 'UTC',
    queue             text NOT NULL,
    body              text NOT NULL,
    priority          smallint NOT NULL DEFAULT 100,
    group_name        text,
    max_attempts      integer NOT NULL DEFAULT 3,
    timeout_ms        bigint NOT NULL DEFAULT 0,
    transactional     boolean NOT NULL DEFAULT false,
    paused            boolean NOT NULL DEFAULT false,
    overlap           text NOT NULL DEFAULT 'skip' CHECK (overlap IN ('skip','allow')),
    misfire           text NOT NULL DEFAULT 'run_once' CHECK (misfire IN ('run_once','skip')),
    version           bigint NOT NULL DEFAULT 1,     -- changes with every change and every fire
    next_fire_at      timestamptz,                   -- NULL while paused
    last_fire_at      timestamptz,                   -- the latest fire time handled
    last_fire_outcome text CHECK (last_fire_outcome IN ('enqueued','skipped_overlap','skipped_misfire')),
    last_fire_missed  integer NOT NULL DEFAULT 0,    -- earlier fire times it stood for or skipped
    last_task_id      bigint,                        -- the latest run (a fire or a run now)
    created_at        timestamptz NOT NULL DEFAULT now(),
    created_by        text NOT NULL DEFAULT '',
    updated_at        timestamptz NOT NULL DEFAULT now(),
    updated_by        text NOT NULL DEFAULT ''
);
-- What schedulers look for: the due schedules, soonest first.
CREATE INDEX readpast_schedules_due ON readpast_schedules (next_fire_at) WHERE next_fire_at IS NOT NULL;

-- The tasks a schedule created, and the fire time each one is the run of.
ALTER TABLE readpast_tasks ADD COLUMN schedule_name text;
ALTER TABLE readpast_tasks ADD COLUMN fire_at timestamptz;
CREATE INDEX readpast_tasks_schedule ON readpast_tasks (schedule_name, id) WHERE schedule_name IS NOT NULL;
