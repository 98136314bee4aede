-- Costs that do not grow with history (docs/QUEUE.md, "Counts and the
-- throughput series"): finished counts per queue and state, and attempts per
-- minute and hour, kept by the transactions that change them.

-- All or nothing: golang-migrate sends the file as one batch; XACT_ABORT rolls
-- the transaction back on any error, and a batch cut short leaves it open until
-- the migration's session ends, which rolls it back (queue.MigrateUp).
SET XACT_ABORT ON;
BEGIN TRANSACTION;

CREATE TABLE dbo.readpast_counts (
    queue nvarchar(64) NOT NULL,
    state varchar(10)  NOT NULL CONSTRAINT readpast_counts_state_ck CHECK (state IN ('succeeded','failed','cancelled')),
    n     bigint       NOT NULL,
    CONSTRAINT readpast_counts_pk PRIMARY KEY (queue, state)
);

INSERT INTO dbo.readpast_counts (queue, state, n)
SELECT queue, state, COUNT_BIG(*) FROM dbo.readpast_tasks
WHERE state IN ('succeeded', 'failed', 'cancelled') GROUP BY queue, state;

CREATE TABLE dbo.readpast_throughput (
    span    varchar(6)   NOT NULL CONSTRAINT readpast_throughput_span_ck CHECK (span IN ('minute','hour')),
    bucket  datetime2(0) NOT NULL,
    queue   nvarchar(64) NOT NULL,
    outcome varchar(10)  NOT NULL,
    n       bigint       NOT NULL,
    busy_ms bigint       NOT NULL,
    CONSTRAINT readpast_throughput_pk PRIMARY KEY (span, bucket, queue, outcome)
);

INSERT INTO dbo.readpast_throughput (span, bucket, queue, outcome, n, busy_ms)
SELECT s.span,
       CASE s.span WHEN 'minute' THEN DATEADD(minute, DATEDIFF(minute, 0, a.finished_at), 0)
                   ELSE DATEADD(hour, DATEDIFF(hour, 0, a.finished_at), 0) END,
       a.queue, a.outcome, COUNT_BIG(*), SUM(a.duration_ms)
FROM dbo.readpast_attempts AS a
CROSS JOIN (VALUES ('minute', 2), ('hour', 8)) AS s(span, days)
WHERE a.finished_at >= DATEADD(day, -s.days, SYSUTCDATETIME())
GROUP BY s.span,
         CASE s.span WHEN 'minute' THEN DATEADD(minute, DATEDIFF(minute, 0, a.finished_at), 0)
                     ELSE DATEADD(hour, DATEDIFF(hour, 0, a.finished_at), 0) END,
         a.queue, a.outcome;

COMMIT TRANSACTION;
