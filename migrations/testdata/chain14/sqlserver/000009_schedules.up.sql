-- Schedules (docs/SCHEDULES.md): a cron expression in a time zone and the
-- template of the task each fire creates.
--
-- Exactly once without a leader: a fire is one transaction that moves the
-- schedule's row from the version its scheduler read to the next one and
-- creates the task; a second scheduler with the same plan reads past the row
-- while the first holds it (UPDLOCK, READPAST) and finds the version gone
-- after. The row keeps only the latest fire and run, so nothing here grows
-- with history. A schedule row is locked first in its transaction, before the
-- rows an enqueue takes, and nothing else locks it (the package's lock order).
--
-- golang-migrate sends this file as one batch: the index on the columns added
-- to readpast_tasks goes through sp_executesql, compiled after they exist.

-- All or nothing: golang-migrate sends the file as one batch; XACT_ABORT rolls
-- the transaction back on any error, and a batch cut short leaves it open until
-- the migration's session ends, which rolls it back (queue.MigrateUp).
SET XACT_ABORT ON;
BEGIN TRANSACTION;

CREATE TABLE dbo.readpast_schedules (
    id                bigint IDENTITY(1,1) NOT NULL CONSTRAINT readpast_schedules_pk PRIMARY KEY CLUSTERED,
    name              nvarchar(64) NOT NULL CONSTRAINT readpast_schedules_name_uq UNIQUE,
    cron              nvarchar(256) NOT NULL,
    time_zone         nvarchar(64) NOT NULL CONSTRAINT readpast_schedules_zone_df DEFAULT N'UTC',
    queue             nvarchar(64) NOT NULL,
    body              nvarchar(max) NOT NULL,
    priority          smallint NOT NULL CONSTRAINT readpast_schedules_priority_df DEFAULT 100,
    group_name        nvarchar(128) NULL,
    max_attempts      int NOT NULL CONSTRAINT readpast_schedules_max_attempts_df DEFAULT 3,
    timeout_ms        bigint NOT NULL CONSTRAINT readpast_schedules_timeout_df DEFAULT 0,
    transactional     bit NOT NULL CONSTRAINT readpast_schedules_tx_df DEFAULT 0,
    paused            bit NOT NULL CONSTRAINT readpast_schedules_paused_df DEFAULT 0,
    overlap           varchar(8) NOT NULL CONSTRAINT readpast_schedules_overlap_df DEFAULT 'skip'
                      CONSTRAINT readpast_schedules_overlap_ck CHECK (overlap IN ('skip','allow')),
    misfire           varchar(8) NOT NULL CONSTRAINT readpast_schedules_misfire_df DEFAULT 'run_once'
                      CONSTRAINT readpast_schedules_misfire_ck CHECK (misfire IN ('run_once','skip')),
    version           bigint NOT NULL CONSTRAINT readpast_schedules_version_df DEFAULT 1,
    next_fire_at      datetime2(6) NULL,
    last_fire_at      datetime2(6) NULL,
    last_fire_outcome varchar(16) NULL
                      CONSTRAINT readpast_schedules_outcome_ck CHECK (last_fire_outcome IN ('enqueued','skipped_overlap','skipped_misfire')),
    last_fire_missed  int NOT NULL CONSTRAINT readpast_schedules_missed_df DEFAULT 0,
    last_task_id      bigint NULL,
    created_at        datetime2(6) NOT NULL CONSTRAINT readpast_schedules_created_df DEFAULT SYSUTCDATETIME(),
    created_by        nvarchar(128) NOT NULL CONSTRAINT readpast_schedules_created_by_df DEFAULT N'',
    updated_at        datetime2(6) NOT NULL CONSTRAINT readpast_schedules_updated_df DEFAULT SYSUTCDATETIME(),
    updated_by        nvarchar(128) NOT NULL CONSTRAINT readpast_schedules_updated_by_df DEFAULT N''
);
-- What schedulers look for: the due schedules, soonest first.
CREATE INDEX readpast_schedules_due ON dbo.readpast_schedules (next_fire_at) WHERE next_fire_at IS NOT NULL;

-- The tasks a schedule created, and the fire time each one is the run of.
-- One column a statement: Babelfish refuses several in one ADD.
ALTER TABLE dbo.readpast_tasks ADD schedule_name nvarchar(64) NULL;
ALTER TABLE dbo.readpast_tasks ADD fire_at datetime2(6) NULL;

EXEC sp_executesql N'CREATE INDEX readpast_tasks_schedule ON dbo.readpast_tasks (schedule_name, id)
    WHERE schedule_name IS NOT NULL;';

COMMIT TRANSACTION;
