-- Jobs (docs/JOBS.md): SQL Server Agent's jobs, a series of steps with an
-- action on success and on failure, and their runs. A job's plan is its steps
-- compiled by the jobs package (each action a step index, -1 quit with
-- success, -2 quit with failure); a run copies the plan it started with, so a
-- change of the job never changes a run under way. Each step execution is a
-- task carrying run_id and run_step; the batch that ends a step task (finish,
-- reclaim, cancel) follows the run's plan in its own transaction
-- (internal/queue/sqlserver/sql_jobs_step.go, stepFollow). No trigger: a
-- table with an enabled trigger refuses the claim's OUTPUT without INTO.
--
-- Index builds: the jobs' tables are new and empty. readpast_tasks_run is
-- built on the populated task table: online where the edition allows it
-- (docs/SQLSERVER.md, "Index builds in migrations"). An offline build blocks
-- every claim and finish on the table (an S lock for the whole build) on
-- Standard and Express: run the migration in a quiet window there.
SET XACT_ABORT ON;
BEGIN TRANSACTION;

CREATE TABLE dbo.readpast_jobs (
    id          bigint IDENTITY(1,1) NOT NULL CONSTRAINT readpast_jobs_pk PRIMARY KEY CLUSTERED,
    name        nvarchar(64) NOT NULL CONSTRAINT readpast_jobs_name_uq UNIQUE,
    description nvarchar(4000) NOT NULL CONSTRAINT readpast_jobs_description_df DEFAULT N'',
    category    nvarchar(4000) NOT NULL CONSTRAINT readpast_jobs_category_df DEFAULT N'',
    owner       nvarchar(128) NOT NULL CONSTRAINT readpast_jobs_owner_df DEFAULT N'',
    enabled     bit NOT NULL CONSTRAINT readpast_jobs_enabled_df DEFAULT 1,
    queue       nvarchar(64) NOT NULL,
    overlap     varchar(8) NOT NULL CONSTRAINT readpast_jobs_overlap_df DEFAULT 'skip'
                CONSTRAINT readpast_jobs_overlap_ck CHECK (overlap IN ('skip','allow')),
    definition  nvarchar(max) NOT NULL,
    version     bigint NOT NULL CONSTRAINT readpast_jobs_version_df DEFAULT 1,
    last_run_id bigint NULL,
    created_at  datetime2(6) NOT NULL CONSTRAINT readpast_jobs_created_df DEFAULT SYSUTCDATETIME(),
    updated_at  datetime2(6) NOT NULL CONSTRAINT readpast_jobs_updated_df DEFAULT SYSUTCDATETIME(),
    updated_by  nvarchar(128) NOT NULL CONSTRAINT readpast_jobs_updated_by_df DEFAULT N''
);

CREATE TABLE dbo.readpast_job_steps (
    job_id            bigint NOT NULL CONSTRAINT readpast_job_steps_job_fk
                      REFERENCES dbo.readpast_jobs (id) ON DELETE CASCADE,
    step_index        int NOT NULL,
    name              nvarchar(128) NOT NULL,
    body              nvarchar(max) NOT NULL,
    target            nvarchar(64) NOT NULL CONSTRAINT readpast_job_steps_target_df DEFAULT N'',
    timeout_ms        bigint NOT NULL CONSTRAINT readpast_job_steps_timeout_df DEFAULT 0,
    transactional     bit NOT NULL CONSTRAINT readpast_job_steps_tx_df DEFAULT 0,
    max_attempts      int NOT NULL CONSTRAINT readpast_job_steps_attempts_df DEFAULT 1,
    retry_interval_ms bigint NOT NULL CONSTRAINT readpast_job_steps_retry_df DEFAULT 0,
    on_success        int NOT NULL,
    on_failure        int NOT NULL,
    CONSTRAINT readpast_job_steps_pk PRIMARY KEY CLUSTERED (job_id, step_index)
);

CREATE TABLE dbo.readpast_job_runs (
    id              bigint IDENTITY(1,1) NOT NULL CONSTRAINT readpast_job_runs_pk PRIMARY KEY CLUSTERED,
    job_id          bigint NOT NULL,
    job_name        nvarchar(64) NOT NULL,
    queue           nvarchar(64) NOT NULL,
    state           varchar(10) NOT NULL CONSTRAINT readpast_job_runs_state_df DEFAULT 'running'
                    CONSTRAINT readpast_job_runs_state_ck CHECK (state IN ('running','succeeded','failed','cancelled')),
    trigger_kind    varchar(16) NOT NULL,
    start_step      int NOT NULL CONSTRAINT readpast_job_runs_start_df DEFAULT 0,
    created_by      nvarchar(128) NOT NULL CONSTRAINT readpast_job_runs_by_df DEFAULT N'',
    started_at      datetime2(6) NOT NULL CONSTRAINT readpast_job_runs_started_df DEFAULT SYSUTCDATETIME(),
    finished_at     datetime2(6) NULL,
    steps_run       int NOT NULL CONSTRAINT readpast_job_runs_steps_df DEFAULT 1,
    current_step    int NOT NULL,
    current_task_id bigint NOT NULL,
    reason          nvarchar(4000) NOT NULL CONSTRAINT readpast_job_runs_reason_df DEFAULT N''
);
-- A job's runs, newest first, one keyset page at a time.
CREATE INDEX readpast_job_runs_job ON dbo.readpast_job_runs (job_id, id);
-- Retention finds ended runs by index.
CREATE INDEX readpast_job_runs_finished ON dbo.readpast_job_runs (finished_at) WHERE state <> 'running';

CREATE TABLE dbo.readpast_run_steps (
    run_id            bigint NOT NULL CONSTRAINT readpast_run_steps_run_fk
                      REFERENCES dbo.readpast_job_runs (id) ON DELETE CASCADE,
    step_index        int NOT NULL,
    name              nvarchar(128) NOT NULL,
    body              nvarchar(max) NOT NULL,
    target            nvarchar(64) NOT NULL CONSTRAINT readpast_run_steps_target_df DEFAULT N'',
    timeout_ms        bigint NOT NULL CONSTRAINT readpast_run_steps_timeout_df DEFAULT 0,
    transactional     bit NOT NULL CONSTRAINT readpast_run_steps_tx_df DEFAULT 0,
    max_attempts      int NOT NULL CONSTRAINT readpast_run_steps_attempts_df DEFAULT 1,
    retry_interval_ms bigint NOT NULL CONSTRAINT readpast_run_steps_retry_df DEFAULT 0,
    on_success        int NOT NULL,
    on_failure        int NOT NULL,
    CONSTRAINT readpast_run_steps_pk PRIMARY KEY CLUSTERED (run_id, step_index)
);

-- A job's schedules are schedules that start a run of it (job_name) instead
-- of enqueueing their task.
ALTER TABLE dbo.readpast_schedules ADD job_name nvarchar(64) NULL;

-- A step task: its run and plan index; retry_interval_ms, when set, the fixed
-- back-off between its attempts.
-- One column a statement: Babelfish refuses several in one ADD.
ALTER TABLE dbo.readpast_tasks ADD run_id bigint NULL;
ALTER TABLE dbo.readpast_tasks ADD run_step int NULL;
ALTER TABLE dbo.readpast_tasks ADD retry_interval_ms bigint NULL;
-- A task's and a queue's wait before a retry (queue.RetryPolicy): a fixed
-- interval (cap NULL), or exponential from the interval up to the cap; NULL:
-- the queue's, else the default back-off.
ALTER TABLE dbo.readpast_tasks ADD retry_cap_ms bigint NULL;
ALTER TABLE dbo.readpast_queues ADD retry_interval_ms bigint NULL;
ALTER TABLE dbo.readpast_queues ADD retry_cap_ms bigint NULL;
-- A run's step executions in order (at most queue.MaxStepExecutions). Built
-- by EXEC: the batch was compiled before the columns existed.
DECLARE @online nvarchar(20) = CASE WHEN CAST(SERVERPROPERTY('EngineEdition') AS int) IN (3, 5, 8)
                                    THEN N'ONLINE = ON' ELSE N'ONLINE = OFF' END;
EXEC (N'CREATE INDEX readpast_tasks_run ON dbo.readpast_tasks (run_id, id) WHERE run_id IS NOT NULL WITH (' + @online + N');');

COMMIT TRANSACTION;
