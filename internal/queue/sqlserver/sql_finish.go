package sqlserver

// Ending one attempt: Finish, Release, ReclaimExpired and the commit of
// RunTransactional all run finishCore, one attempt per transaction, so each
// transaction takes at most one chain row and one group row, in lock order.
//
// Parameters: @id, @token (the lease), @outcome varchar, @error (NULL keeps the
// task's last_error), @node,
// @worker, @session (NULL: keep what the task row has), @started, @finished
// (datetime2 or NULL: the database's now), @rows, @messages, @release bit
// (shutdown: pending at once, without back-off),
// @reclaim bit (only if the lease has expired: a holder that heartbeated in the
// meantime keeps its task; the lost attempt is logged from the task row's
// started_at, which every claim sets), @b1..@b12 int: queue.Backoff(n) in
// milliseconds for retry n = attempts - retry_base, clamped to 1..12 as
// Backoff itself does.
//
// The result is one row: lost (the lease was not current: nothing changed),
// state (after the attempt, or the task's current state when lost) and
// available_at (when pending again).

const finishPrologue = `SET NOCOUNT ON;
SET XACT_ABORT ON;
`

const finishCore = `
DECLARE @now datetime2(6) = SYSUTCDATETIME();
DECLARE @chain nvarchar(128);
DECLARE @cof bit = 0;
DECLARE @group nvarchar(128);
DECLARE @state varchar(10);
DECLARE @stage int;
DECLARE @available datetime2(6);
DECLARE @lost bit = 0;
DECLARE @min_stage int;
DECLARE @done TABLE (
    state        varchar(10)   NOT NULL,
    available_at datetime2(6)  NOT NULL,
    attempt      int           NOT NULL,
    stage        int           NOT NULL,
    queue        nvarchar(64)  NOT NULL,
    lease_owner  nvarchar(128) NULL,
    session_id   nvarchar(64)  NULL,
    started_at   datetime2(6)  NULL
);

-- Lock order 2: the chain row.
` + lockChain + `
-- The group never changes after enqueue either.
SELECT @group = t.group_name
FROM dbo.readpast_tasks AS t
WHERE t.id = @id;

-- Lock order 3: the task, fenced by its lease token. Zero rows: the lease is
-- not current (expired and reclaimed, finished, released); change nothing.
UPDATE t
SET t.state            = n.next_state,
    t.available_at     = CASE WHEN n.next_state = 'pending'
                              THEN DATEADD(millisecond,
                                           CASE WHEN @release = 1 THEN 0 ELSE b.backoff_ms END,
                                           @now)
                              ELSE t.available_at END,
    t.lease_owner      = NULL,
    t.lease_token      = NULL,
    t.lease_expires_at = NULL,
    t.cancel_requested = 0,
    t.finished_at      = CASE WHEN n.next_state = 'pending' THEN NULL ELSE @now END,
    t.finished_by      = CASE WHEN n.next_state = 'pending' THEN NULL ELSE t.lease_owner END,
    t.last_error       = COALESCE(@error, t.last_error)
OUTPUT inserted.state, inserted.available_at, inserted.attempts, inserted.stage,
       inserted.queue, deleted.lease_owner, deleted.session_id, deleted.started_at
INTO @done (state, available_at, attempt, stage, queue, lease_owner, session_id, started_at)
FROM dbo.readpast_tasks AS t WITH (ROWLOCK)
CROSS APPLY (
    -- queue.AfterAttempt, row by row: an operator's cancel request wins over
    -- everything (a release or a reclaim must not run the task again); a
    -- release is pending at once; failed, timed_out and lost retry while
    -- attempts are left.
    SELECT CASE
        WHEN t.cancel_requested = 1 THEN 'cancelled'
        WHEN @release = 1 THEN 'pending'
        WHEN @outcome = 'succeeded' THEN 'succeeded'
        WHEN @outcome = 'cancelled' THEN 'cancelled'
        WHEN t.attempts - t.retry_base < t.max_attempts THEN 'pending'
        ELSE 'failed'
    END AS next_state
) AS n
CROSS APPLY (
    SELECT CHOOSE(CASE WHEN t.attempts - t.retry_base < 1 THEN 1
                       WHEN t.attempts - t.retry_base > 12 THEN 12
                       ELSE t.attempts - t.retry_base END,
                  @b1, @b2, @b3, @b4, @b5, @b6, @b7, @b8, @b9, @b10, @b11, @b12) AS backoff_ms
) AS b
WHERE t.id = @id
  AND t.lease_token = @token
  AND t.state = 'running'
  AND (@reclaim = 0 OR t.lease_expires_at < @now);

IF NOT EXISTS (SELECT 1 FROM @done)
BEGIN
    SET @lost = 1;
    SELECT @state = t.state
    FROM dbo.readpast_tasks AS t
    WHERE t.id = @id;
END
ELSE
BEGIN
    SELECT @state = d.state, @stage = d.stage, @available = d.available_at
    FROM @done AS d;

    -- Still lock order 3: the chain's pending tasks.
` + chainFailurePolicy + `
    IF @chain IS NOT NULL AND @state <> 'pending'
    BEGIN
` + refreshChain + `
    END;

    -- Lock order 4: the group row, last. A claimer holding it (admission) never
    -- waits on anything we hold, so we only queue behind it.
    IF @group IS NOT NULL
    BEGIN
        UPDATE g
        SET g.running = CASE WHEN g.running > 0 THEN g.running - 1 ELSE 0 END
        FROM dbo.readpast_groups AS g WITH (ROWLOCK)
        WHERE g.name = @group;
    END;

    -- The execution-log row, in the same transaction as the state change.
    -- Every claim sets started_at, so a reclaimed (lost) attempt ran from the
    -- started_at of the row it fenced; the others start when their worker says.
    INSERT INTO dbo.readpast_attempts
        (task_id, attempt, queue, node, worker, session_id, started_at, finished_at,
         duration_ms, outcome, error, rows_affected, messages)
    SELECT @id, d.attempt, d.queue,
           COALESCE(@node, N''),
           COALESCE(@worker, d.lease_owner, N''),
           COALESCE(@session, d.session_id, N''),
           w.started_at, w.finished_at,
           CASE WHEN w.finished_at > w.started_at
                THEN DATEDIFF_BIG(millisecond, w.started_at, w.finished_at)
                ELSE 0 END,
           @outcome, COALESCE(@error, N''), @rows, COALESCE(@messages, N'')
    FROM @done AS d
    CROSS APPLY (
        SELECT CAST(COALESCE(CASE WHEN @reclaim = 1 THEN d.started_at END, @started, @now)
                    AS datetime2(6)) AS started_at,
               CAST(COALESCE(@finished, @now) AS datetime2(6)) AS finished_at
    ) AS w;
END;
`

const finishResult = `
SELECT @lost AS lost, @state AS state, @available AS available_at;
`

var finishParams = []string{
	"id", "token", "outcome", "error", "node", "worker", "session", "started", "finished",
	"rows", "messages", "release", "reclaim",
	"b1", "b2", "b3", "b4", "b5", "b6", "b7", "b8", "b9", "b10", "b11", "b12",
}

// finishBatch ends one attempt in its own transaction, in one round trip.
var finishBatch = query{
	name:   "finish",
	text:   finishPrologue + "BEGIN TRAN;\n" + finishCore + "\nCOMMIT TRAN;\n" + finishResult,
	params: finishParams,
}

// finishInTx ends one attempt inside the caller's transaction (RunTransactional).
var finishInTx = query{
	name:   "finish-in-tx",
	text:   finishPrologue + finishCore + finishResult,
	params: finishParams,
}

// expiredLeases lists running tasks whose lease ran out, oldest expiry first,
// reading past rows a finisher or heartbeat holds right now (they are alive).
var expiredLeases = query{
	name: "expired-leases",
	text: `SET NOCOUNT ON;
SELECT TOP (@limit) t.id, t.lease_token, t.lease_owner, t.session_id, t.started_at
FROM dbo.readpast_tasks AS t WITH (READPAST, READCOMMITTEDLOCK)
WHERE t.state = 'running'
  AND t.lease_expires_at < SYSUTCDATETIME()
ORDER BY t.lease_expires_at, t.id;
`,
	params: []string{"limit"},
}
