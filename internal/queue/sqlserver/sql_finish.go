package sqlserver

// Ending one attempt: Finish, Release and ReclaimExpired all run finishCore,
// one attempt per transaction, so each transaction takes at most one chain row
// and one group row, in lock order.
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
DECLARE @queue nvarchar(64);
DECLARE @state varchar(10);
DECLARE @stage int;
DECLARE @attempt int;
DECLARE @tries int;
DECLARE @max_attempts int;
DECLARE @cancel bit;
DECLARE @held_by nvarchar(128);
DECLARE @held_session nvarchar(64);
DECLARE @held_since datetime2(6);
DECLARE @backoff_ms int;
DECLARE @available datetime2(6);
DECLARE @lost bit = 0;
DECLARE @committed bit = 0;
DECLARE @start_at datetime2(6);
DECLARE @fin_at datetime2(6);
DECLARE @busy_ms bigint;
` + chainDeclarations + rollupDeclarations + stepDeclarations + `
-- The rollup stripe of this attempt: its task's (sql_rollups.go, "Stripes"),
-- the one throughputBuckets made rows in before the transaction.
SET @stripe = ` + taskStripe + `;

-- Lock order 2: the chain row.
` + lockChain + `
-- Lock order 3: the task, fenced by its lease token, read under the lock
-- the update then takes. No row: the lease is not current (expired and
-- reclaimed, finished, released); change nothing.
SELECT @queue = t.queue, @group = t.group_name, @stage = t.stage, @attempt = t.attempts,
       @tries = t.attempts - t.retry_base, @max_attempts = t.max_attempts,
       @cancel = t.cancel_requested, @held_by = t.lease_owner,
       @held_session = t.session_id, @held_since = t.started_at,
       @committed = CASE WHEN t.committed_token = @token THEN 1 ELSE 0 END,
       @run_id = t.run_id, @run_step = t.run_step, @retry_interval_ms = t.retry_interval_ms,
       @retry_cap_ms = t.retry_cap_ms
FROM dbo.readpast_tasks AS t WITH (UPDLOCK, ROWLOCK)
WHERE t.id = @id
  AND t.lease_token = @token
  AND t.state = 'running'
  AND (@reclaim = 0 OR t.lease_expires_at < @now);

IF @queue IS NULL
BEGIN
    SET @lost = 1;
    SELECT @state = t.state
    FROM dbo.readpast_tasks AS t
    WHERE t.id = @id;
END
ELSE
BEGIN
    -- A transactional body that committed (markCommittedBatch) succeeded,
    -- whatever ended its attempt since: a release at shutdown, the reclaim
    -- of its expired lease. It never runs again.
    IF @committed = 1 AND @outcome <> 'succeeded'
    BEGIN
        SET @error = N'its body had committed, so the attempt succeeded; it was ended as '
                     + CAST(@outcome AS nvarchar(10)) + COALESCE(N': ' + NULLIF(@error, N''), N'');
        SET @outcome = 'succeeded';
    END;
    IF @committed = 1
        SET @release = 0;
    -- queue.AfterAttempt: a committed body succeeded; otherwise an operator's
    -- cancel request wins over everything (a release or a reclaim must not
    -- run the task again); a release is pending at once; failed, timed_out
    -- and lost retry while attempts are left, after queue.Backoff, delayed
    -- (out of the claim's indexes) until due.
    SET @state = CASE
        WHEN @committed = 1 THEN 'succeeded'
        WHEN @cancel = 1 THEN 'cancelled'
        WHEN @release = 1 THEN 'pending'
        WHEN @outcome = 'succeeded' THEN 'succeeded'
        WHEN @outcome = 'cancelled' THEN 'cancelled'
        WHEN @tries < @max_attempts THEN 'pending'
        ELSE 'failed'
    END;
    -- queue.RetryWait: the task's retry policy, else its queue's (read by
    -- key, only for a retry), else queue.Backoff; a policy's wait is fixed,
    -- or doubles from the interval up to the cap (at most a day: an int).
    IF @state = 'pending' AND @release = 0 AND @retry_interval_ms IS NULL
        SELECT @retry_interval_ms = q.retry_interval_ms, @retry_cap_ms = q.retry_cap_ms
        FROM dbo.readpast_queues AS q
        WHERE q.name = @queue;
    IF @retry_cap_ms IS NOT NULL
        SET @retry_interval_ms = CASE
            WHEN @tries >= 32 THEN @retry_cap_ms
            ELSE (SELECT MIN(v) FROM (VALUES (@retry_cap_ms),
                  (@retry_interval_ms * POWER(CAST(2 AS bigint), CASE WHEN @tries < 1 THEN 0 ELSE @tries - 1 END))) AS w(v))
        END;
    SET @backoff_ms = CASE WHEN @release = 1 THEN 0
                           WHEN @retry_interval_ms IS NOT NULL THEN CAST(@retry_interval_ms AS int)
                           ELSE CHOOSE(CASE WHEN @tries < 1 THEN 1 WHEN @tries > 12 THEN 12 ELSE @tries END,
                                       @b1, @b2, @b3, @b4, @b5, @b6, @b7, @b8, @b9, @b10, @b11, @b12) END;
    IF @state = 'pending'
        SET @available = DATEADD(millisecond, @backoff_ms, @now);

    UPDATE dbo.readpast_tasks WITH (ROWLOCK)
    SET state            = @state,
        available_at     = COALESCE(@available, available_at),
        delayed          = CASE WHEN @state = 'pending' AND @backoff_ms > 0 THEN 1 ELSE 0 END,
        lease_owner      = NULL,
        lease_token      = NULL,
        lease_expires_at = NULL,
        cancel_requested = 0,
        -- A release of an attempt a fault stopped gives it back to the
        -- budget (queue.Attempt.Uncounted).
        retry_base       = retry_base + CASE WHEN @release = 1 AND @uncounted = 1 THEN 1 ELSE 0 END,
        finished_at      = CASE WHEN @state = 'pending' THEN NULL ELSE @now END,
        finished_by      = CASE WHEN @state = 'pending' THEN NULL ELSE lease_owner END,
        -- A success clears an earlier attempt's error (the log keeps it).
        last_error       = CASE WHEN @state = 'succeeded' THEN NULL ELSE COALESCE(@error, last_error) END
    WHERE id = @id;

    IF @state <> 'pending'
        INSERT INTO @counted (queue, state, n) VALUES (@queue, @state, 1);

    -- Still lock order 3: the chain's pending tasks.
` + chainFailurePolicy + `
    IF @chain IS NOT NULL AND @state <> 'pending'
    BEGIN
` + refreshChain + `
    END;

    -- Lock order 4: the group row. A claimer holding it (admission) never
    -- waits on anything we hold, so we only queue behind it.
    IF @group IS NOT NULL
    BEGIN
        UPDATE dbo.readpast_groups WITH (ROWLOCK)
        SET running  = CASE WHEN running > 0 THEN running - 1 ELSE 0 END,
            has_free = CASE WHEN running - 1 < max_running THEN 1 ELSE 0 END -- the claim's index of groups with a free slot
        WHERE name = @group;
    END;

    -- The attempt's times: a reclaimed (lost) attempt ran from the started_at
    -- its claim set; the others start and end when their worker says. A row
    -- never holds the zero time.
    SET @fin_at = CAST(COALESCE(@finished, @now) AS datetime2(6));
    SET @start_at = CAST(COALESCE(CASE WHEN @reclaim = 1 THEN @held_since END, @started, @fin_at) AS datetime2(6));
    SET @busy_ms = CASE WHEN @fin_at > @start_at THEN DATEDIFF_BIG(millisecond, @start_at, @fin_at) ELSE 0 END;

    -- Lock order 5: the rollup rows, of this task's stripe only: the counts
    -- row, then the minute and the hour rows, WITH (UPDLOCK, SERIALIZABLE)
    -- (sql_rollups.go). Held to the COMMIT, through the log insert and the
    -- log flush; another finish of the queue takes these same rows only when
    -- its task id has the same stripe, so one queue's finishes no longer
    -- commit one at a time (Microsoft, "Transaction locking and row
    -- versioning guide": an update lock, then the exclusive lock of the
    -- update, is held until the transaction ends).
` + countRollup + throughputRollup + `
    -- The execution-log row, in the same transaction as the state change.
    INSERT INTO dbo.readpast_attempts
        (task_id, attempt, queue, node, worker, session_id, started_at, finished_at,
         duration_ms, outcome, error, rows_affected, messages)
    VALUES (@id, @attempt, @queue,
            COALESCE(@node, N''),
            COALESCE(@worker, @held_by, N''),
            COALESCE(@session, @held_session, N''),
            @start_at, @fin_at, @busy_ms,
            @outcome, COALESCE(@error, N''), @rows, COALESCE(@messages, N''));

    -- The result output the attempt kept (docs/QUEUE.md, "Result output"),
    -- only when its queue keeps any: a new row of its own key, which no one
    -- else writes (the lease fences the attempt), so it waits for no one.
    IF @results IS NOT NULL
        INSERT INTO dbo.readpast_results (task_id, attempt, results)
        SELECT @id, @attempt, @results
        WHERE NOT EXISTS (SELECT 1 FROM dbo.readpast_results AS r WHERE r.task_id = @id AND r.attempt = @attempt);

    -- Lock order 7: the run row of a job step (sql_jobs_step.go).
` + stepFollow + `
    -- Lock order 8: the alert outbox (docs/ALERTS.md). A task that failed for
    -- good leaves one event row, written with its end; only then, so a
    -- success costs nothing more. A new row of its own: it waits for no one.
    IF @state = 'failed'
        INSERT INTO dbo.readpast_alert_events (kind, task_id, queue, schedule_name, target, job_name, outcome, attempts, error)
        SELECT 'task_failed', t.id, t.queue, t.schedule_name, t.target,
               -- the run row of a step's task: this transaction locked it at lock order 7
               (SELECT r.job_name FROM dbo.readpast_job_runs AS r WHERE r.id = t.run_id),
               @outcome, t.attempts, COALESCE(@error, N'')
        FROM dbo.readpast_tasks AS t
        WHERE t.id = @id;
END;
`

const finishResult = `
SELECT @lost AS lost, @state AS state, @available AS available_at;
`

var finishParams = []string{
	"id", "token", "outcome", "error", "node", "worker", "session", "started", "finished",
	"rows", "messages", "results", "release", "reclaim", "uncounted",
	"b1", "b2", "b3", "b4", "b5", "b6", "b7", "b8", "b9", "b10", "b11", "b12",
}

// finishBatch ends one attempt in its own transaction, in one round trip.
var finishBatch = query{
	name:   "finish",
	text:   readCommitted + finishPrologue + throughputBuckets + "BEGIN TRAN;\n" + finishCore + "\nCOMMIT TRAN;\n" + finishResult,
	params: finishParams,
}

// expiredLeases lists running tasks whose lease ran out, oldest expiry first,
// reading past rows a finisher or heartbeat holds right now (they are alive).
var expiredLeases = query{
	name: "expired-leases",
	text: readCommitted + `SET NOCOUNT ON;
SELECT TOP (@limit) t.id, t.lease_token, t.lease_owner, t.session_id, t.started_at
FROM dbo.readpast_tasks AS t WITH (READPAST, READCOMMITTEDLOCK)
WHERE t.state = 'running'
  AND t.lease_expires_at < SYSUTCDATETIME()
ORDER BY t.lease_expires_at, t.id;
`,
	params: []string{"limit"},
}
