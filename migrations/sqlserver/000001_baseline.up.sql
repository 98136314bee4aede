-- ReadPast's schema on SQL Server, whole (docs/QUEUE.md describes the model,
-- docs/SQLSERVER.md the lock hygiene). It replaces the pre-release chain of
-- migrations 1-14; a database made by that chain is refused by migrate with
-- what to do (migrations/legacy.go).
--
-- Times are datetime2(6) in UTC (SYSUTCDATETIME()). golang-migrate sends this
-- file as one batch, so it holds no CREATE PROCEDURE: the claim and finish
-- logic are parameterised batches kept in the sqlserver package, each with its
-- lock order explained there.
--
-- The cost rule of SPEC §9: nothing a claim, a finish or a page reads may grow
-- with history. Each index below says which read it serves. Indexes over
-- unfinished tasks are filtered and not unique (but one), so a second claimer
-- never blocks on a key check (the seed's filtered-unique-index trap).

-- All or nothing: golang-migrate sends the file as one batch; XACT_ABORT rolls
-- the transaction back on any error, and a batch cut short leaves it open until
-- the migration's session ends, which rolls it back (migrations.Up).
SET XACT_ABORT ON;
BEGIN TRANSACTION;

-- Queue settings, shared by every node (SPEC §5).
CREATE TABLE dbo.readpast_queues (
    name        nvarchar(64) NOT NULL CONSTRAINT readpast_queues_pk PRIMARY KEY,
    workers     int NULL,
    max_running int NULL,
    paused      bit NOT NULL CONSTRAINT readpast_queues_paused_df DEFAULT 0,
    updated_at  datetime2(6) NOT NULL CONSTRAINT readpast_queues_updated_df DEFAULT SYSUTCDATETIME(),
    updated_by  nvarchar(128) NOT NULL CONSTRAINT readpast_queues_by_df DEFAULT N''
);

-- Concurrency groups: at most max_running of a group's tasks run at once.
CREATE TABLE dbo.readpast_groups (
    name        nvarchar(128) NOT NULL CONSTRAINT readpast_groups_pk PRIMARY KEY,
    max_running int NOT NULL CONSTRAINT readpast_groups_max_df DEFAULT 1,
    running     int NOT NULL CONSTRAINT readpast_groups_running_df DEFAULT 0,
    updated_at  datetime2(6) NOT NULL CONSTRAINT readpast_groups_updated_df DEFAULT SYSUTCDATETIME(),
    updated_by  nvarchar(128) NOT NULL CONSTRAINT readpast_groups_by_df DEFAULT N''
);

-- Chains: ordered stages; the failure policy is the chain's.
CREATE TABLE dbo.readpast_chains (
    name                nvarchar(128) NOT NULL CONSTRAINT readpast_chains_pk PRIMARY KEY,
    continue_on_failure bit NOT NULL CONSTRAINT readpast_chains_cof_df DEFAULT 0,
    created_at          datetime2(6) NOT NULL CONSTRAINT readpast_chains_created_df DEFAULT SYSUTCDATETIME()
);

-- The tasks (SPEC §3). The last four columns came after the others in the
-- pre-release chain and stay last, so a database made by either has the same
-- column order.
CREATE TABLE dbo.readpast_tasks (
    id                  bigint IDENTITY(1,1) NOT NULL CONSTRAINT readpast_tasks_pk PRIMARY KEY CLUSTERED,
    queue               nvarchar(64) NOT NULL,
    body                nvarchar(max) NOT NULL,
    priority            smallint NOT NULL CONSTRAINT readpast_tasks_priority_df DEFAULT 100,
    available_at        datetime2(6) NOT NULL CONSTRAINT readpast_tasks_available_df DEFAULT SYSUTCDATETIME(),
    group_name          nvarchar(128) NULL,
    chain               nvarchar(128) NULL,
    stage               int NOT NULL CONSTRAINT readpast_tasks_stage_df DEFAULT 0,
    chain_wait          bit NOT NULL CONSTRAINT readpast_tasks_chain_wait_df DEFAULT 0,
    chain_cancelled     bit NOT NULL CONSTRAINT readpast_tasks_chain_cancelled_df DEFAULT 0,
    continue_on_failure bit NOT NULL CONSTRAINT readpast_tasks_cof_df DEFAULT 0,
    max_attempts        int NOT NULL CONSTRAINT readpast_tasks_max_attempts_df DEFAULT 3,
    retry_base          int NOT NULL CONSTRAINT readpast_tasks_retry_base_df DEFAULT 0,
    timeout_ms          bigint NOT NULL CONSTRAINT readpast_tasks_timeout_df DEFAULT 0,
    transactional       bit NOT NULL CONSTRAINT readpast_tasks_tx_df DEFAULT 0,
    state               varchar(10) NOT NULL CONSTRAINT readpast_tasks_state_df DEFAULT 'pending'
                        CONSTRAINT readpast_tasks_state_ck CHECK (state IN ('pending','running','succeeded','failed','cancelled')),
    attempts            int NOT NULL CONSTRAINT readpast_tasks_attempts_df DEFAULT 0,
    lease_owner         nvarchar(128) NULL,
    lease_token         bigint NULL,
    lease_expires_at    datetime2(6) NULL,
    session_id          nvarchar(64) NULL,
    cancel_requested    bit NOT NULL CONSTRAINT readpast_tasks_cancel_df DEFAULT 0,
    created_at          datetime2(6) NOT NULL CONSTRAINT readpast_tasks_created_df DEFAULT SYSUTCDATETIME(),
    created_by          nvarchar(128) NOT NULL CONSTRAINT readpast_tasks_by_df DEFAULT N'',
    started_at          datetime2(6) NULL,
    finished_at         datetime2(6) NULL,
    finished_by         nvarchar(128) NULL,
    last_error          nvarchar(max) NULL,
    -- 1 while pending with available_at ahead: out of the claim's indexes.
    delayed             bit NOT NULL CONSTRAINT readpast_tasks_delayed_df DEFAULT 0,
    unique_key          nvarchar(128) NULL,
    schedule_name       nvarchar(64) NULL,  -- the schedule that made it
    fire_at             datetime2(6) NULL   -- and the fire time it is the run of
);

-- Claimers read past row locks but not past page or table locks, so the queue
-- table must never escalate: a big enqueue or purge would otherwise take a
-- table lock and make every claimer wait until it commits.
ALTER TABLE dbo.readpast_tasks SET (LOCK_ESCALATION = DISABLE);

-- Task bodies (nvarchar(max), up to the body limit) are stored out of row, so
-- the clustered index that every claim, finish and heartbeat walks by key holds
-- only the narrow columns: more rows per page, fewer pages read and locked.
-- Babelfish for PostgreSQL has no sp_tableoption (PostgreSQL stores large
-- values out of line by itself): the call runs on SQL Server only, through
-- dynamic SQL so that Babelfish never parses it.
IF CHARINDEX(N'Babelfish', @@VERSION) = 0
    EXEC (N'EXEC sp_tableoption N''dbo.readpast_tasks'', ''large value types out of row'', 1;');

-- The claim's paths behind a backlog (docs/QUEUE.md, "Claiming behind a
-- backlog"): a delayed task is out of the claim's indexes until due, and
-- ungrouped and grouped ready tasks have filtered indexes of their own.
CREATE INDEX readpast_tasks_ready ON dbo.readpast_tasks (queue, priority, available_at, id)
    WHERE state = 'pending' AND chain_wait = 0 AND delayed = 0 AND group_name IS NULL;
CREATE INDEX readpast_tasks_ready_grouped ON dbo.readpast_tasks (queue, group_name, priority, available_at, id)
    WHERE state = 'pending' AND chain_wait = 0 AND delayed = 0 AND group_name IS NOT NULL;
-- Delayed tasks, soonest first: what the claim moves into the ready indexes.
CREATE INDEX readpast_tasks_delayed ON dbo.readpast_tasks (queue, available_at)
    WHERE state = 'pending' AND delayed = 1;
-- Running rows: lease reclaim and per-queue running counts.
CREATE INDEX readpast_tasks_running ON dbo.readpast_tasks (lease_expires_at)
    INCLUDE (queue) WHERE state = 'running';
-- Retention reads finished tasks by finished_at.
CREATE INDEX readpast_tasks_finished ON dbo.readpast_tasks (finished_at)
    WHERE state IN ('succeeded', 'failed', 'cancelled');
-- Dashboard lists (newest first) by state, queue, or both.
CREATE INDEX readpast_tasks_state ON dbo.readpast_tasks (state, id);
CREATE INDEX readpast_tasks_queue ON dbo.readpast_tasks (queue, id);
CREATE INDEX readpast_tasks_queue_state ON dbo.readpast_tasks (queue, state, id);
-- A group's or a schedule's tasks of one state are one range in id order: a
-- page of one state seeks its range, a page of every state merges the newest
-- rows of one range per state (listTasksByStateQuery), so neither reads the
-- history of other states. A claim or a finish of a grouped or scheduled task
-- moves its entry here too, since the state is a key column.
CREATE INDEX readpast_tasks_group_state ON dbo.readpast_tasks (group_name, state, id) WHERE group_name IS NOT NULL;
CREATE INDEX readpast_tasks_schedule_state ON dbo.readpast_tasks (schedule_name, state, id) WHERE schedule_name IS NOT NULL;
-- The chain refresh reads and filters only this index (chain_wait included), so
-- it locks just the rows whose flag flips, never a task a claimer is taking.
CREATE INDEX readpast_tasks_chain ON dbo.readpast_tasks (chain, stage, id) INCLUDE (state, chain_wait) WHERE chain IS NOT NULL;
-- Unique keys on enqueue (docs/QUEUE.md, "Unique keys"): a filtered unique
-- index over unfinished keyed tasks arbitrates. A claim keeps a task inside the
-- filter with the same key, so SQL Server does not touch the index row (the key
-- and the filter's outcome are unchanged) and no claimer waits on a key check:
-- the seed's trap needs a row entering the filter.
CREATE UNIQUE INDEX readpast_tasks_unique ON dbo.readpast_tasks (queue, unique_key)
    WHERE unique_key IS NOT NULL AND state IN ('pending', 'running');

-- The execution log: one row per attempt (SPEC §6).
CREATE TABLE dbo.readpast_attempts (
    id            bigint IDENTITY(1,1) NOT NULL CONSTRAINT readpast_attempts_pk PRIMARY KEY CLUSTERED,
    task_id       bigint NOT NULL,
    attempt       int NOT NULL,
    queue         nvarchar(64) NOT NULL,
    node          nvarchar(128) NOT NULL CONSTRAINT readpast_attempts_node_df DEFAULT N'',
    worker        nvarchar(128) NOT NULL CONSTRAINT readpast_attempts_worker_df DEFAULT N'',
    session_id    nvarchar(64) NOT NULL CONSTRAINT readpast_attempts_session_df DEFAULT N'',
    started_at    datetime2(6) NOT NULL,
    finished_at   datetime2(6) NOT NULL,
    duration_ms   bigint NOT NULL,
    outcome       varchar(10) NOT NULL
                  CONSTRAINT readpast_attempts_outcome_ck CHECK (outcome IN ('succeeded','failed','timed_out','cancelled','lost')),
    error         nvarchar(max) NOT NULL CONSTRAINT readpast_attempts_error_df DEFAULT N'',
    rows_affected bigint NOT NULL CONSTRAINT readpast_attempts_rows_df DEFAULT 0,
    messages      nvarchar(max) NOT NULL CONSTRAINT readpast_attempts_messages_df DEFAULT N''
);
-- The log never escalates to a table lock: a purge deletes in batches, and a
-- table lock taken by one would stop every finisher's insert until it commits.
ALTER TABLE dbo.readpast_attempts SET (LOCK_ESCALATION = DISABLE);
-- A task's attempts.
CREATE INDEX readpast_attempts_task ON dbo.readpast_attempts (task_id, attempt);
-- Pages by outcome, and by queue and outcome: each queue's attempts of each
-- outcome are one range in id order, and a page of one queue merges the newest
-- rows of one range per outcome (attemptsOfQueueQuery).
CREATE INDEX readpast_attempts_outcome ON dbo.readpast_attempts (outcome, id);
CREATE INDEX readpast_attempts_list ON dbo.readpast_attempts (queue, outcome, id);
-- Retention and time ranges.
CREATE INDEX readpast_attempts_finished ON dbo.readpast_attempts (finished_at);

-- Nodes register and heartbeat (SPEC §5); retention deletes the long gone.
CREATE TABLE dbo.readpast_nodes (
    id           nvarchar(128) NOT NULL CONSTRAINT readpast_nodes_pk PRIMARY KEY,
    hostname     nvarchar(256) NOT NULL CONSTRAINT readpast_nodes_host_df DEFAULT N'',
    pid          int NOT NULL CONSTRAINT readpast_nodes_pid_df DEFAULT 0,
    version      nvarchar(64) NOT NULL CONSTRAINT readpast_nodes_version_df DEFAULT N'',
    started_at   datetime2(6) NOT NULL CONSTRAINT readpast_nodes_started_df DEFAULT SYSUTCDATETIME(),
    heartbeat_at datetime2(6) NOT NULL CONSTRAINT readpast_nodes_hb_df DEFAULT SYSUTCDATETIME(),
    stopped_at   datetime2(6) NULL,
    info         nvarchar(max) NOT NULL CONSTRAINT readpast_nodes_info_df DEFAULT N'{}'
);

-- Who changed what (SPEC §7: every mutation records who did it).
CREATE TABLE dbo.readpast_audit (
    id     bigint IDENTITY(1,1) NOT NULL CONSTRAINT readpast_audit_pk PRIMARY KEY CLUSTERED,
    at     datetime2(6) NOT NULL CONSTRAINT readpast_audit_at_df DEFAULT SYSUTCDATETIME(),
    actor  nvarchar(128) NOT NULL,
    action nvarchar(64) NOT NULL,
    target nvarchar(256) NOT NULL,
    detail nvarchar(max) NOT NULL CONSTRAINT readpast_audit_detail_df DEFAULT N''
);
CREATE INDEX readpast_audit_at ON dbo.readpast_audit (at);

-- Costs that do not grow with history (docs/QUEUE.md, "Counts and the
-- throughput series"): finished counts per queue and state, and attempts per
-- minute and hour, kept by the transactions that change them.
CREATE TABLE dbo.readpast_counts (
    queue nvarchar(64) NOT NULL,
    state varchar(10)  NOT NULL CONSTRAINT readpast_counts_state_ck CHECK (state IN ('succeeded','failed','cancelled')),
    n     bigint       NOT NULL,
    CONSTRAINT readpast_counts_pk PRIMARY KEY (queue, state)
);
CREATE TABLE dbo.readpast_throughput (
    span    varchar(6)   NOT NULL CONSTRAINT readpast_throughput_span_ck CHECK (span IN ('minute','hour')),
    bucket  datetime2(0) NOT NULL,
    queue   nvarchar(64) NOT NULL,
    outcome varchar(10)  NOT NULL,
    n       bigint       NOT NULL,
    busy_ms bigint       NOT NULL,
    CONSTRAINT readpast_throughput_pk PRIMARY KEY (span, bucket, queue, outcome)
);

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

COMMIT TRANSACTION;
