-- Times are datetime2(6) in UTC (SYSUTCDATETIME()). golang-migrate runs this file
-- as one batch, so it holds no CREATE PROCEDURE: the claim and finish logic are
-- parameterised batches kept in the sqlserver package.

-- All or nothing: golang-migrate sends the file as one batch; XACT_ABORT rolls
-- the transaction back on any error, and a batch cut short leaves it open until
-- the migration's session ends, which rolls it back (queue.MigrateUp).
SET XACT_ABORT ON;
BEGIN TRANSACTION;

CREATE TABLE dbo.readpast_queues (
    name        nvarchar(64) NOT NULL CONSTRAINT readpast_queues_pk PRIMARY KEY,
    workers     int NULL,
    max_running int NULL,
    paused      bit NOT NULL CONSTRAINT readpast_queues_paused_df DEFAULT 0,
    updated_at  datetime2(6) NOT NULL CONSTRAINT readpast_queues_updated_df DEFAULT SYSUTCDATETIME(),
    updated_by  nvarchar(128) NOT NULL CONSTRAINT readpast_queues_by_df DEFAULT N''
);

CREATE TABLE dbo.readpast_groups (
    name        nvarchar(128) NOT NULL CONSTRAINT readpast_groups_pk PRIMARY KEY,
    max_running int NOT NULL CONSTRAINT readpast_groups_max_df DEFAULT 1,
    running     int NOT NULL CONSTRAINT readpast_groups_running_df DEFAULT 0,
    updated_at  datetime2(6) NOT NULL CONSTRAINT readpast_groups_updated_df DEFAULT SYSUTCDATETIME(),
    updated_by  nvarchar(128) NOT NULL CONSTRAINT readpast_groups_by_df DEFAULT N''
);

CREATE TABLE dbo.readpast_chains (
    name                nvarchar(128) NOT NULL CONSTRAINT readpast_chains_pk PRIMARY KEY,
    continue_on_failure bit NOT NULL CONSTRAINT readpast_chains_cof_df DEFAULT 0,
    created_at          datetime2(6) NOT NULL CONSTRAINT readpast_chains_created_df DEFAULT SYSUTCDATETIME()
);

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
    last_error          nvarchar(max) NULL
);

-- Claimers read past row locks but not past page or table locks, so the queue
-- table must never escalate: a big enqueue or purge would otherwise take a
-- table lock and make every claimer wait until it commits.
ALTER TABLE dbo.readpast_tasks SET (LOCK_ESCALATION = DISABLE);

-- The claim path: a filtered index over claimable-by-chain pending rows, in claim
-- order. Not unique, so a second claimer never blocks on a key check (the seed's bug).
CREATE INDEX readpast_tasks_claim ON dbo.readpast_tasks (queue, priority, available_at, id)
    INCLUDE (group_name) WHERE state = 'pending' AND chain_wait = 0;
CREATE INDEX readpast_tasks_running ON dbo.readpast_tasks (lease_expires_at)
    INCLUDE (queue) WHERE state = 'running';
CREATE INDEX readpast_tasks_state ON dbo.readpast_tasks (state, id);
CREATE INDEX readpast_tasks_queue ON dbo.readpast_tasks (queue, id);
CREATE INDEX readpast_tasks_queue_state ON dbo.readpast_tasks (queue, state, id);
CREATE INDEX readpast_tasks_group ON dbo.readpast_tasks (group_name, id) WHERE group_name IS NOT NULL;
-- The chain refresh reads and filters only this index (chain_wait included), so
-- it locks just the rows whose flag flips, never a task a claimer is taking.
CREATE INDEX readpast_tasks_chain ON dbo.readpast_tasks (chain, stage, id) INCLUDE (state, chain_wait) WHERE chain IS NOT NULL;

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
CREATE INDEX readpast_attempts_task ON dbo.readpast_attempts (task_id, attempt);
CREATE INDEX readpast_attempts_queue ON dbo.readpast_attempts (queue, id);
CREATE INDEX readpast_attempts_outcome ON dbo.readpast_attempts (outcome, id);
CREATE INDEX readpast_attempts_finished ON dbo.readpast_attempts (finished_at);

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

CREATE TABLE dbo.readpast_audit (
    id     bigint IDENTITY(1,1) NOT NULL CONSTRAINT readpast_audit_pk PRIMARY KEY CLUSTERED,
    at     datetime2(6) NOT NULL CONSTRAINT readpast_audit_at_df DEFAULT SYSUTCDATETIME(),
    actor  nvarchar(128) NOT NULL,
    action nvarchar(64) NOT NULL,
    target nvarchar(256) NOT NULL,
    detail nvarchar(max) NOT NULL CONSTRAINT readpast_audit_detail_df DEFAULT N''
);
CREATE INDEX readpast_audit_at ON dbo.readpast_audit (at);

COMMIT TRANSACTION;
