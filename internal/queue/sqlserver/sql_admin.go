package sqlserver

// Lease upkeep and operator actions.

// heartbeatBatch extends every lease still held and reports each lease as
// held or lost, with its cancel_requested flag, in the order given (the same
// task may be listed with an old and a new token). @leases is a JSON array of
// {"id": "…", "token": "…"} (strings, so bigint values convert exactly);
// @lease_ms the new lease length.
//
// The batch opens no transaction: each lease is extended by its own
// single-row UPDATE, committed at once. A heartbeat therefore never holds one
// task's lock while it waits for another's, and so can never close a deadlock
// cycle with a finisher that holds its own task and reads its chain-mates.
//
// OPENJSON numbers the elements of an array from 0 ([key] "0", "1", …), so the
// walk starts below 0: it once started at 0, never extended the first lease
// of any heartbeat, and a body that outran its lease was stopped as lost.
var heartbeatBatch = query{
	name: "heartbeat",
	text: readCommitted + `SET NOCOUNT ON;

DECLARE @i int = -1;
DECLARE @id bigint;
DECLARE @token bigint;
DECLARE @asked TABLE (
    ord   int    NOT NULL PRIMARY KEY,
    id    bigint NOT NULL,
    token bigint NOT NULL
);
DECLARE @held TABLE (
    ord              int NOT NULL PRIMARY KEY,
    cancel_requested bit NOT NULL
);

INSERT INTO @asked (ord, id, token)
SELECT CAST(a.[key] AS int), j.id, j.token
FROM OPENJSON(@leases) AS a
CROSS APPLY OPENJSON(a.value) WITH (
    id    bigint '$.id',
    token bigint '$.token'
) AS j;

WHILE 1 = 1
BEGIN
    SELECT TOP (1) @i = a.ord, @id = a.id, @token = a.token
    FROM @asked AS a
    WHERE a.ord > @i
    ORDER BY a.ord;

    IF @@ROWCOUNT = 0
        BREAK;

    -- Fenced like every change a holder makes; committed at once.
    UPDATE dbo.readpast_tasks
    SET lease_expires_at = DATEADD(millisecond, @lease_ms, SYSUTCDATETIME())
    OUTPUT @i, inserted.cancel_requested INTO @held (ord, cancel_requested)
    WHERE id = @id
      AND lease_token = @token
      AND state = 'running';
END;

SELECT a.id,
       CAST(CASE WHEN h.ord IS NULL THEN 1 ELSE 0 END AS bit) AS lost,
       COALESCE(h.cancel_requested, CAST(0 AS bit)) AS cancel_requested
FROM @asked AS a
LEFT JOIN @held AS h ON h.ord = a.ord
ORDER BY a.ord;
`,
	params: []string{"leases", "lease_ms"},
}

// setSessionBatch records the target session of a running attempt, fenced.
var setSessionBatch = query{
	name: "set-session",
	text: readCommitted + `SET NOCOUNT ON;
UPDATE dbo.readpast_tasks
SET session_id = @session
WHERE id = @id
  AND lease_token = @token
  AND state = 'running';
SELECT @@ROWCOUNT;
`,
	params: []string{"session", "id", "token"},
}

// cancelBatch cancels a pending task at once (with the chain failure policy,
// a chain refresh and the finished counts), or flags a running one for its
// holder. The result row is the state before (NULL: no such task) and after.
var cancelBatch = query{
	name: "cancel",
	text: readCommitted + `SET NOCOUNT ON;
SET XACT_ABORT ON;
BEGIN TRAN;
` + cancelCore + `COMMIT TRAN;

SELECT @before AS before_state, @state AS state;
`,
	params: []string{"id", "actor"},
}

// cancelCore is the cancel inside a transaction (cancelBatch, and
// cancelRunBatch in sql_jobs.go): @id the task, @actor; it leaves @before and
// @state.
const cancelCore = `
DECLARE @now datetime2(6) = SYSUTCDATETIME();
DECLARE @chain nvarchar(128);
DECLARE @cof bit = 0;
DECLARE @before varchar(10);
DECLARE @state varchar(10);
DECLARE @stage int;
DECLARE @queue nvarchar(64);
` + chainDeclarations + rollupDeclarations + stepDeclarations + `
-- Lock order 2: the chain row.
` + lockChain + `
-- Lock order 3: the task. If a claimer is taking it right now we wait for its
-- commit, then see it running and only flag it.
SELECT @before = t.state, @stage = t.stage, @queue = t.queue, @run_id = t.run_id, @run_step = t.run_step
FROM dbo.readpast_tasks AS t WITH (UPDLOCK, ROWLOCK)
WHERE t.id = @id;

SET @state = @before;

IF @before = 'pending'
BEGIN
    UPDATE dbo.readpast_tasks WITH (ROWLOCK)
    SET state            = 'cancelled',
        finished_at      = @now,
        finished_by      = @actor,
        lease_expires_at = NULL,
        last_error       = CONCAT(N'cancelled by ', @actor)
    WHERE id = @id;

    SET @state = 'cancelled';
    INSERT INTO @counted (queue, state, n) VALUES (@queue, 'cancelled', 1);
` + chainFailurePolicy + `
    IF @chain IS NOT NULL
    BEGIN
` + refreshChain + `
    END;
` + countRollup + `
    -- Lock order 4: the run row of a job step (sql_jobs_step.go).
` + stepFollow + `
END
ELSE IF @before = 'running'
BEGIN
    -- The holder sees the flag in its next heartbeat and stops the statement;
    -- whatever then ends the attempt ends the task cancelled.
    UPDATE dbo.readpast_tasks WITH (ROWLOCK)
    SET cancel_requested = 1,
        finished_by      = @actor
    WHERE id = @id;
END;

IF @before IN ('pending', 'running')
BEGIN
    INSERT INTO dbo.readpast_audit (actor, action, target, detail)
    VALUES (@actor, N'cancel', CONCAT(N'task ', @id), @state);
END;

`

// retryBatch puts a failed or cancelled task back to pending now with a fresh
// attempt budget (retry_base = attempts), ready at once, and reopens the tasks
// of later stages that the chain failure policy cancelled; the finished counts
// shrink with them. A task whose unique key another unfinished task of its
// queue holds now is not retried (conflict = 1): two unfinished tasks never
// share a key. The result is the state before and the conflict flag.
var retryBatch = query{
	name: "retry",
	text: readCommitted + `SET NOCOUNT ON;
SET XACT_ABORT ON;
BEGIN TRAN;

DECLARE @now datetime2(6) = SYSUTCDATETIME();
DECLARE @chain nvarchar(128);
DECLARE @cof bit = 0;
DECLARE @before varchar(10);
DECLARE @stage int;
DECLARE @queue nvarchar(64);
DECLARE @key nvarchar(128);
DECLARE @conflict bit = 0;
DECLARE @reopened TABLE (id bigint NOT NULL PRIMARY KEY, queue nvarchar(64) NOT NULL);
` + chainDeclarations + rollupDeclarations + `
-- Lock order 2: the chain row.
` + lockChain + `
-- Lock order 3: the task, then the chain's tasks.
SELECT @before = t.state, @stage = t.stage, @queue = t.queue, @key = t.unique_key
FROM dbo.readpast_tasks AS t WITH (UPDLOCK, ROWLOCK)
WHERE t.id = @id;

IF @before IN ('failed', 'cancelled') AND @key IS NOT NULL AND EXISTS (
    SELECT 1
    FROM dbo.readpast_tasks AS x
    WHERE x.queue = @queue
      AND x.unique_key = @key
      AND x.unique_key IS NOT NULL
      AND x.state IN ('pending', 'running'))
    SET @conflict = 1;

IF @before IN ('failed', 'cancelled') AND @conflict = 0
BEGIN
    UPDATE dbo.readpast_tasks WITH (ROWLOCK)
    SET state            = 'pending',
        available_at     = @now,
        delayed          = 0,
        retry_base       = attempts,
        chain_wait       = 0,
        chain_cancelled  = 0,
        cancel_requested = 0,
        lease_expires_at = NULL,
        finished_at      = NULL,
        finished_by      = NULL
    WHERE id = @id;

    INSERT INTO @counted (queue, state, n) VALUES (@queue, @before, -1);

    IF @chain IS NOT NULL
    BEGIN
        DELETE FROM @chain_rows;
        INSERT INTO @chain_rows (id, queue, chain_wait)
        SELECT x.id, x.queue, 1
        FROM dbo.readpast_tasks AS x
        WHERE x.chain IS NOT NULL
          AND x.chain = @chain
          AND x.state = 'cancelled'
          AND x.chain_cancelled = 1
          AND x.stage > @stage;

        -- A reopened stage keeps its available_at: one enqueued with a
        -- delay is delayed again (the claim reads delayed alone).
        UPDATE t
        SET t.state           = 'pending',
            t.delayed         = CASE WHEN t.available_at > @now THEN 1 ELSE 0 END,
            t.retry_base      = t.attempts,
            t.chain_cancelled = 0,
            t.finished_at     = NULL,
            t.finished_by     = NULL,
            t.last_error      = NULL
        OUTPUT inserted.id, inserted.queue INTO @reopened (id, queue)
        FROM dbo.readpast_tasks AS t WITH (ROWLOCK, FORCESEEK)
        JOIN @chain_rows AS r ON r.id = t.id
        WHERE t.state = 'cancelled';

        -- The counts shrink by the rows the UPDATE changed (its OUTPUT), not
        -- the rows listed above: the list was read without a lock, and a
        -- purge that deleted a listed task in between has already taken it
        -- out of the counts.
        INSERT INTO @counted (queue, state, n)
        SELECT r.queue, 'cancelled', -COUNT_BIG(*)
        FROM @reopened AS r
        GROUP BY r.queue;
` + refreshChain + `
    END;
` + countRollup + `
    INSERT INTO dbo.readpast_audit (actor, action, target, detail)
    VALUES (@actor, N'retry', CONCAT(N'task ', @id), CONCAT(N'was ', @before));

    -- Lock order last: the run row (sql_jobs_step.go: the task row, then
    -- the run row, as a step's end takes them). A task of a fan-out step
    -- retried while its step still waits for the others is counted again
    -- among the unfinished: its end was counted as failed, and the step
    -- must wait for its new end, not follow without it or count it twice.
    -- A task of an execution the run has left is not counted.
    UPDATE r
    SET r.fanout_left   = r.fanout_left + 1,
        r.fanout_failed = CASE WHEN r.fanout_failed > 0 THEN r.fanout_failed - 1 ELSE 0 END
    FROM dbo.readpast_job_runs AS r WITH (ROWLOCK)
    JOIN dbo.readpast_tasks AS t ON t.run_id = r.id
    WHERE t.id = @id
      AND r.state = 'running'
      AND r.fanout_left > 0
      AND r.current_step = t.run_step
      AND r.current_task_id <= @id;
END;

COMMIT TRAN;

SELECT @before AS before_state, @conflict AS conflict;
`,
	params: []string{"id", "actor"},
}

// updateQueueBatch creates the queue row if needed and changes the settings
// whose @set_* flag is 1. UPDLOCK, HOLDLOCK on the probe: two callers creating
// the same queue serialise on the key range instead of one failing on the key.
var updateQueueBatch = query{
	name: "update-queue",
	text: readCommitted + `SET NOCOUNT ON;
SET XACT_ABORT ON;
BEGIN TRAN;

IF NOT EXISTS (
    SELECT 1
    FROM dbo.readpast_queues AS q WITH (UPDLOCK, HOLDLOCK)
    WHERE q.name = @name)
BEGIN
    INSERT INTO dbo.readpast_queues (name, updated_by)
    VALUES (@name, @actor);
END;

UPDATE dbo.readpast_queues
SET workers     = CASE WHEN @set_workers = 1 THEN @workers ELSE workers END,
    max_running = CASE WHEN @clear_max_running = 1 THEN NULL
                       WHEN @set_max_running = 1 THEN @max_running
                       ELSE max_running END,
    paused      = CASE WHEN @set_paused = 1 THEN @paused ELSE paused END,
    default_target = CASE WHEN @set_default_target = 1 THEN @default_target ELSE default_target END,
    retry_interval_ms = CASE WHEN @set_retry = 1 THEN @retry_interval_ms ELSE retry_interval_ms END,
    retry_cap_ms      = CASE WHEN @set_retry = 1 THEN @retry_cap_ms ELSE retry_cap_ms END,
    result_rows = CASE WHEN @set_result_rows = 1 THEN @result_rows ELSE result_rows END,
    updated_at  = SYSUTCDATETIME(),
    updated_by  = @actor
WHERE name = @name;

INSERT INTO dbo.readpast_audit (actor, action, target, detail)
VALUES (@actor, N'update_queue', CONCAT(N'queue ', @name), @detail);

COMMIT TRAN;
`,
	params: []string{
		"name", "actor", "set_workers", "workers", "clear_max_running",
		"set_max_running", "max_running", "set_paused", "paused", "detail",
		"set_default_target", "default_target",
		"set_retry", "retry_interval_ms", "retry_cap_ms",
		"set_result_rows", "result_rows",
	},
}

// setGroupLimitBatch creates or updates a group's limit (lock order 4 only).
var setGroupLimitBatch = query{
	name: "set-group-limit",
	text: readCommitted + `SET NOCOUNT ON;
SET XACT_ABORT ON;
BEGIN TRAN;

IF EXISTS (
    SELECT 1
    FROM dbo.readpast_groups AS g WITH (UPDLOCK, HOLDLOCK)
    WHERE g.name = @name)
BEGIN
    UPDATE dbo.readpast_groups
    SET max_running = @max_running,
        has_free    = CASE WHEN running < @max_running THEN 1 ELSE 0 END, -- the claim's index of groups with a free slot
        updated_at  = SYSUTCDATETIME(),
        updated_by  = @actor
    WHERE name = @name;
END
ELSE
BEGIN
    INSERT INTO dbo.readpast_groups (name, max_running, has_free, updated_by)
    VALUES (@name, @max_running, CASE WHEN @max_running > 0 THEN 1 ELSE 0 END, @actor);
END;

INSERT INTO dbo.readpast_audit (actor, action, target, detail)
VALUES (@actor, N'set_group_limit', CONCAT(N'group ', @name), CAST(@max_running AS nvarchar(12)));

COMMIT TRAN;
`,
	params: []string{"name", "max_running", "actor"},
}
