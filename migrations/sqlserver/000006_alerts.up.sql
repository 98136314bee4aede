-- Alerts (docs/ALERTS.md): the outbox of facts alerts are raised for, the
-- deliveries to operators, and the conditions of time-based rules firing now.
--
-- An event is written by the transaction that makes its fact (a task that
-- failed for good: finishCore, sqlserver/sql_finish.go), so it exists exactly
-- when the fact does; nodes claim events with a lease (claimed_by,
-- visible_at: hidden until the lease ends), turn them into deliveries and
-- delete them in one transaction.

-- All or nothing: golang-migrate sends the file as one batch; XACT_ABORT rolls
-- the transaction back on any error, and a batch cut short leaves it open until
-- the migration's session ends, which rolls it back (migrations.Up).
SET XACT_ABORT ON;
BEGIN TRANSACTION;

CREATE TABLE dbo.readpast_alert_events (
    id            bigint IDENTITY(1,1) NOT NULL CONSTRAINT readpast_alert_events_pk PRIMARY KEY CLUSTERED,
    at            datetime2(6) NOT NULL CONSTRAINT readpast_alert_events_at_df DEFAULT SYSUTCDATETIME(),
    kind          varchar(32) NOT NULL,
    task_id       bigint NOT NULL,
    queue         nvarchar(64) NOT NULL,
    schedule_name nvarchar(64) NULL,
    target        nvarchar(64) NOT NULL CONSTRAINT readpast_alert_events_target_df DEFAULT N'', -- the task's target
    job_name      nvarchar(64) NULL, -- the job of a step's task
    outcome       varchar(10) NOT NULL,
    attempts      int NOT NULL,
    error         nvarchar(max) NOT NULL CONSTRAINT readpast_alert_events_error_df DEFAULT N'',
    claimed_by    nvarchar(128) NULL,
    visible_at    datetime2(6) NOT NULL CONSTRAINT readpast_alert_events_visible_df DEFAULT SYSUTCDATETIME()
);
CREATE INDEX readpast_alert_events_visible ON dbo.readpast_alert_events (visible_at, id);

-- One message to one channel of one operator; alert_key is the alert id the
-- receiver dedupes by. A pending delivery is due at next_at; a claim moves
-- next_at to the end of its lease and counts an attempt, so one node sends it
-- at a time and another takes over when the lease runs out.
CREATE TABLE dbo.readpast_alert_deliveries (
    id         bigint IDENTITY(1,1) NOT NULL CONSTRAINT readpast_alert_deliveries_pk PRIMARY KEY CLUSTERED,
    alert_key  nvarchar(200) NOT NULL CONSTRAINT readpast_alert_deliveries_key UNIQUE,
    rule_name  nvarchar(128) NOT NULL,
    operator   nvarchar(128) NOT NULL,
    channel    nvarchar(128) NOT NULL,
    kind       varchar(32) NOT NULL,
    scope      nvarchar(256) NOT NULL CONSTRAINT readpast_alert_deliveries_scope_df DEFAULT N'',
    subject    nvarchar(max) NOT NULL,
    detail     nvarchar(max) NOT NULL CONSTRAINT readpast_alert_deliveries_detail_df DEFAULT N'',
    n          int NOT NULL,
    created_at datetime2(6) NOT NULL CONSTRAINT readpast_alert_deliveries_created_df DEFAULT SYSUTCDATETIME(),
    state      varchar(10) NOT NULL CONSTRAINT readpast_alert_deliveries_state_df DEFAULT 'pending'
               CONSTRAINT readpast_alert_deliveries_state_ck CHECK (state IN ('pending','sent','failed')),
    next_at    datetime2(6) NOT NULL,
    attempts   int NOT NULL CONSTRAINT readpast_alert_deliveries_attempts_df DEFAULT 0,
    claimed_by nvarchar(128) NULL,
    last_error nvarchar(max) NOT NULL CONSTRAINT readpast_alert_deliveries_error_df DEFAULT N'',
    ended_at   datetime2(6) NULL
);
CREATE INDEX readpast_alert_deliveries_due ON dbo.readpast_alert_deliveries (next_at, id) WHERE state = 'pending';
CREATE INDEX readpast_alert_deliveries_ended ON dbo.readpast_alert_deliveries (ended_at) WHERE state IN ('sent', 'failed');

-- Time-based rules' subjects firing now (a stuck queue, a silent node): a
-- row appears when the condition starts and goes when it recovers, each in
-- the transaction that adds the notification.
CREATE TABLE dbo.readpast_alert_conditions (
    alert_key nvarchar(200) NOT NULL CONSTRAINT readpast_alert_conditions_pk PRIMARY KEY,
    since     datetime2(6) NOT NULL CONSTRAINT readpast_alert_conditions_since_df DEFAULT SYSUTCDATETIME(),
    detail    nvarchar(max) NOT NULL CONSTRAINT readpast_alert_conditions_detail_df DEFAULT N''
);

COMMIT TRANSACTION;
