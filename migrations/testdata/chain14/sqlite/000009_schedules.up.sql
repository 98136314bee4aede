-- Schedules (docs/SCHEDULES.md): a cron expression in a time zone and the
-- template of the task each fire creates. Times are integer microseconds, UTC.
--
-- Exactly once without a leader: a fire is one transaction that moves the
-- schedule's row from the version its scheduler read to the next one and
-- creates the task; a second scheduler with the same plan finds the version
-- gone and writes nothing. The row keeps only the latest fire and run, so
-- nothing here grows with history.
CREATE TABLE readpast_schedules (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    name              TEXT NOT NULL UNIQUE,
    cron              TEXT NOT NULL,
    time_zone         TEXT NOT NULL DEFAULT 'UTC',
    queue             TEXT NOT NULL,
    body              TEXT NOT NULL,
    priority          INTEGER NOT NULL DEFAULT 100,
    group_name        TEXT,
    max_attempts      INTEGER NOT NULL DEFAULT 3,
    timeout_ms        INTEGER NOT NULL DEFAULT 0,
    transactional     INTEGER NOT NULL DEFAULT 0,
    paused            INTEGER NOT NULL DEFAULT 0,
    overlap           TEXT NOT NULL DEFAULT 'skip' CHECK (overlap IN ('skip','allow')),
    misfire           TEXT NOT NULL DEFAULT 'run_once' CHECK (misfire IN ('run_once','skip')),
    version           INTEGER NOT NULL DEFAULT 1,   -- changes with every change and every fire
    next_fire_at      INTEGER,                      -- NULL while paused
    last_fire_at      INTEGER,                      -- the latest fire time handled
    last_fire_outcome TEXT CHECK (last_fire_outcome IN ('enqueued','skipped_overlap','skipped_misfire')),
    last_fire_missed  INTEGER NOT NULL DEFAULT 0,   -- earlier fire times it stood for or skipped
    last_task_id      INTEGER,                      -- the latest run (a fire or a run now)
    created_at        INTEGER NOT NULL,
    created_by        TEXT NOT NULL DEFAULT '',
    updated_at        INTEGER NOT NULL,
    updated_by        TEXT NOT NULL DEFAULT ''
);
-- What schedulers look for: the due schedules, soonest first.
CREATE INDEX readpast_schedules_due ON readpast_schedules (next_fire_at) WHERE next_fire_at IS NOT NULL;

-- The tasks a schedule created, and the fire time each one is the run of.
ALTER TABLE readpast_tasks ADD COLUMN schedule_name TEXT;
ALTER TABLE readpast_tasks ADD COLUMN fire_at INTEGER;
CREATE INDEX readpast_tasks_schedule ON readpast_tasks (schedule_name, id) WHERE schedule_name IS NOT NULL;
