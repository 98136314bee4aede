package sqlserver

// The execution log and retention (queue.LogStore), and the cheap settings
// read (queue.QueueStore).

// attemptsQuery is a keyset page of the execution log, newest first. Each
// filter is off when its parameter is NULL (@task_id, @before: 0); OPTION
// (RECOMPILE) compiles the statement for the filters given, so it seeks the
// matching index: (task_id, attempt), (queue, id), (outcome, id), (finished_at)
// or the primary key.
var attemptsQuery = query{
	name: "attempts",
	text: `SELECT TOP (@limit) a.id, a.task_id, a.attempt, a.queue, a.node, a.worker, a.session_id,
       a.started_at, a.finished_at, a.duration_ms, a.outcome, a.error,
       a.rows_affected, a.messages
FROM dbo.readpast_attempts AS a
WHERE (@task_id = 0 OR a.task_id = @task_id)
  AND (@queue IS NULL OR a.queue = @queue)
  AND (@outcome IS NULL OR a.outcome = @outcome)
  AND (@since IS NULL OR a.finished_at >= @since)
  AND (@until IS NULL OR a.finished_at < @until)
  AND (@before = 0 OR a.id < @before)
ORDER BY a.id DESC
OPTION (RECOMPILE);
`,
	params: []string{"limit", "task_id", "queue", "outcome", "since", "until", "before"},
}

// purgeAttemptsBatch deletes up to @batch log rows that finished before
// @cutoff, oldest first, through the (finished_at) index. The result is the
// number deleted; callers loop in small batches so no transaction is long.
var purgeAttemptsBatch = query{
	name: "purge-attempts",
	text: `SET NOCOUNT ON;
WITH old AS (
    SELECT TOP (@batch) a.id
    FROM dbo.readpast_attempts AS a WITH (ROWLOCK)
    WHERE a.finished_at < @cutoff
    ORDER BY a.finished_at
)
DELETE FROM old;
SELECT @@ROWCOUNT;
`,
	params: []string{"batch", "cutoff"},
}

// purgeTasksBatch deletes up to @batch finished tasks that finished before
// @cutoff. UPDLOCK, READPAST, ROWLOCK: a task another transaction holds (a
// retry putting it back to pending) is skipped rather than waited for, and
// the state is checked again under the lock, so a retried task survives.
var purgeTasksBatch = query{
	name: "purge-tasks",
	text: `SET NOCOUNT ON;
WITH old AS (
    SELECT TOP (@batch) t.id
    FROM dbo.readpast_tasks AS t WITH (UPDLOCK, READPAST, ROWLOCK)
    WHERE t.state IN ('succeeded', 'failed', 'cancelled')
      AND t.finished_at < @cutoff
)
DELETE FROM old;
SELECT @@ROWCOUNT;
`,
	params: []string{"batch", "cutoff"},
}

// queueSettingsQuery reads queue settings without counting tasks: every node
// runs it each second.
var queueSettingsQuery = query{
	name: "queue-settings",
	text: `SELECT q.name, q.workers, q.max_running, q.paused, q.updated_at, q.updated_by
FROM dbo.readpast_queues AS q
ORDER BY q.name;
`,
}
