package sqlserver

// The execution log and retention (queue.LogStore), and the cheap settings
// read (queue.QueueStore).

import (
	"strings"

	"readpast/internal/queue"
)

// attemptsQuery is a keyset page of the execution log, newest first. Each
// filter is off when its parameter is NULL (@task_id, @before: 0); OPTION
// (RECOMPILE) compiles the statement for the filters given, so it seeks the
// matching index: (task_id, attempt), (queue, outcome, id), (outcome, id),
// (finished_at) or the primary key. A queue's attempts of every outcome take
// attemptsOfQueueQuery instead.
var attemptsQuery = query{
	name: "attempts",
	text: readCommitted + `SELECT TOP (@limit) a.id, a.task_id, a.attempt, a.queue, a.node, a.worker, a.session_id,
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

// attemptsOfQueueQuery is attemptsQuery for one queue's attempts of every
// outcome (@queue given, no task, no outcome). (queue, outcome, id) holds them
// as one range per outcome (migrations/*/000001_baseline): the newest @limit ids of each
// range are sought, and the page is the newest of those, read by primary key.
// Seeking (queue) alone and sorting by id would read the queue's whole
// history for each page.
var attemptsOfQueueQuery = query{
	name: "attempts-of-queue",
	text: readCommitted + `SELECT TOP (@limit) a.id, a.task_id, a.attempt, a.queue, a.node, a.worker, a.session_id,
       a.started_at, a.finished_at, a.duration_ms, a.outcome, a.error,
       a.rows_affected, a.messages
FROM (VALUES ` + valueRows(queue.Outcomes) + `) AS o (outcome)
CROSS APPLY (SELECT TOP (@limit) x.id
               FROM dbo.readpast_attempts AS x
              WHERE x.queue = @queue AND x.outcome = o.outcome
                AND (@since IS NULL OR x.finished_at >= @since)
                AND (@until IS NULL OR x.finished_at < @until)
                AND (@before = 0 OR x.id < @before)
              ORDER BY x.id DESC) AS p
JOIN dbo.readpast_attempts AS a ON a.id = p.id
ORDER BY a.id DESC
OPTION (RECOMPILE);
`,
	params: []string{"limit", "queue", "since", "until", "before"},
}

// valueRows is a fixed set of values (every outcome, every state) as the
// rows of a VALUES list, ('succeeded'), …: varchar literals, the columns' own
// type, so each seek compares like types.
func valueRows[T ~string](values []T) string {
	rows := make([]string, len(values))
	for i, v := range values {
		rows[i] = "('" + string(v) + "')"
	}
	return strings.Join(rows, ", ")
}

// purgeAttemptsBatch deletes up to @batch log rows that finished before
// @cutoff, oldest first, through the (finished_at) index, skipping rows
// another transaction holds. The result is the number deleted; callers loop
// in batches of at most queue.MaxPurgeBatch (2,000), so no transaction is
// long, and lock escalation is disabled on the table (migrations/*/000001_baseline), so a
// purge never takes a table lock that would stop the finishers' log inserts.
// A DELETE with the rows chosen in a subquery, not through a CTE: the same on
// SQL Server, and a form Babelfish accepts.
var purgeAttemptsBatch = query{
	name: "purge-attempts",
	text: readCommitted + `SET NOCOUNT ON;
DELETE FROM dbo.readpast_attempts WITH (ROWLOCK)
WHERE id IN (
    SELECT TOP (@batch) a.id
    FROM dbo.readpast_attempts AS a WITH (UPDLOCK, READPAST, ROWLOCK)
    WHERE a.finished_at < @cutoff
    ORDER BY a.finished_at);
SELECT @@ROWCOUNT;
`,
	params: []string{"batch", "cutoff"},
}

// purgeTasksBatch deletes up to @batch finished tasks that finished before
// @cutoff, oldest first, found through readpast_tasks_finished (the predicates
// match its filter, so the purge never reads a pending or running row), and
// takes their finished counts off the rollup in the same transaction. UPDLOCK,
// READPAST, ROWLOCK: a task another transaction holds (a retry putting it back
// to pending) is skipped rather than waited for, and the DELETE checks the
// state again, so a retried task survives. The read names attempts, which the
// index does not cover, so its lookup locks the clustered key as well, as every
// other writer of a task does first.
var purgeTasksBatch = query{
	name: "purge-tasks",
	text: readCommitted + `SET NOCOUNT ON;
SET XACT_ABORT ON;
BEGIN TRAN;

DECLARE @old TABLE (id bigint NOT NULL PRIMARY KEY, attempts int NOT NULL);
DECLARE @gone TABLE (id bigint NOT NULL, queue nvarchar(64) NOT NULL, state varchar(10) NOT NULL);
` + rollupDeclarations + `
INSERT INTO @old (id, attempts)
SELECT TOP (@batch) t.id, t.attempts
FROM dbo.readpast_tasks AS t WITH (UPDLOCK, READPAST, ROWLOCK, INDEX(readpast_tasks_finished))
WHERE t.state IN ('succeeded', 'failed', 'cancelled')
  AND t.finished_at < @cutoff
ORDER BY t.finished_at;

DELETE t
OUTPUT deleted.id, deleted.queue, deleted.state INTO @gone (id, queue, state)
FROM dbo.readpast_tasks AS t WITH (ROWLOCK, FORCESEEK)
WHERE t.id IN (SELECT o.id FROM @old AS o)
  AND t.state IN ('succeeded', 'failed', 'cancelled');

-- Their result output (docs/QUEUE.md, "Result output"), by its key: rows
-- only a finish of the same task writes, which takes the task's row first,
-- as this did, so the order is the finish's.
DELETE r
FROM dbo.readpast_results AS r WITH (ROWLOCK)
WHERE r.task_id IN (SELECT g.id FROM @gone AS g);

INSERT INTO @counted (queue, state, n)
SELECT g.queue, g.state, -COUNT_BIG(*)
FROM @gone AS g
GROUP BY g.queue, g.state;
` + countRollup + `
COMMIT TRAN;

SELECT COUNT_BIG(*) FROM @gone;
`,
	params: []string{"batch", "cutoff"},
}

// queueSettingsQuery reads queue settings without counting tasks: every node
// runs it each second.
var queueSettingsQuery = query{
	name: "queue-settings",
	text: readCommitted + `SELECT q.name, q.workers, q.max_running, q.paused, q.updated_at, q.updated_by, q.default_target,
       q.retry_interval_ms, q.retry_cap_ms, q.result_rows
FROM dbo.readpast_queues AS q
ORDER BY q.name;
`,
}
