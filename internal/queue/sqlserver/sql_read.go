package sqlserver

import "readpast/internal/queue"

// Reads for the dashboard and the API. They take no hints: at READ COMMITTED
// they never see uncommitted data, and with READ_COMMITTED_SNAPSHOT ON (which a
// DBA may well enable) they do not even wait for writers.

// getTaskQuery reads one task and what queue.WaitInfo needs to say why it
// waits: the database clock, the queue's settings and running count (only for
// a pending task of a capped queue), the group's counter, and the chain's lowest
// unfinished stage with its number of unfinished tasks (only for a
// chain-waiting task).
var getTaskQuery = query{
	name: "get-task",
	text: readCommitted + `SELECT ` + columns("t") + `,
       SYSUTCDATETIME() AS now_utc,
       q.paused,
       q.workers,
       q.max_running,
       CASE WHEN t.state = 'pending' AND q.max_running IS NOT NULL
            THEN (SELECT COUNT(*)
                  FROM dbo.readpast_tasks AS r
                  WHERE r.queue = t.queue
                    AND r.state = 'running')
       END AS queue_running,
       g.running AS group_running,
       g.max_running AS group_max_running,
       cs.stage AS chain_stage,
       cs.unfinished AS chain_unfinished
FROM dbo.readpast_tasks AS t
LEFT JOIN dbo.readpast_queues AS q ON q.name = t.queue
LEFT JOIN dbo.readpast_groups AS g ON g.name = t.group_name
OUTER APPLY (
    SELECT TOP (1) x.stage, COUNT(*) AS unfinished
    FROM dbo.readpast_tasks AS x
    WHERE t.state = 'pending'
      AND t.chain_wait = 1
      AND x.chain IS NOT NULL
      AND x.chain = t.chain
      AND x.state IN ('pending', 'running')
    GROUP BY x.stage
    ORDER BY x.stage
) AS cs
WHERE t.id = @id;
`,
	params: []string{"id"},
}

// listTasksQuery is the keyset page, newest first. Each filter is off when its
// parameter is NULL (@before: 0). OPTION (RECOMPILE) compiles the statement for
// the filters actually given, so each call seeks the index that matches them
// ((state, id), (queue, id), (queue, state, id), (group_name, state, id),
// (schedule_name, state, id), (chain, stage, id)) instead of one plan for all
// combinations. A group's or a schedule's tasks of every state take
// listTasksByStateQuery instead.
var listTasksQuery = query{
	name: "list-tasks",
	text: readCommitted + `SELECT TOP (@limit) ` + columns("t") + `
FROM dbo.readpast_tasks AS t
WHERE (@state IS NULL OR t.state = @state)
  AND (@queue IS NULL OR t.queue = @queue)
  AND (@group IS NULL OR t.group_name = @group)
  AND (@chain IS NULL OR t.chain = @chain)
  AND (@schedule IS NULL OR t.schedule_name = @schedule)
  AND (@before = 0 OR t.id < @before)
ORDER BY t.id DESC
OPTION (RECOMPILE);
`,
	params: []string{"limit", "state", "queue", "group", "chain", "schedule", "before"},
}

// listTasksByStateQuery is listTasksQuery for a group's or a schedule's tasks
// of every state (@group or @schedule given; no state, no chain). Their
// indexes, (group_name, state, id) and (schedule_name, state, id), hold them
// as one range per state (migrations/*/000001_baseline): the newest @limit ids of each
// range are sought, and the page is the newest of those, read by primary key.
// Seeking the group alone and sorting by id would read all of its history for
// each page.
var listTasksByStateQuery = query{
	name: "list-tasks-by-state",
	text: readCommitted + `SELECT TOP (@limit) ` + columns("t") + `
FROM (VALUES ` + valueRows(queue.States) + `) AS s (state)
CROSS APPLY (SELECT TOP (@limit) x.id
               FROM dbo.readpast_tasks AS x
              WHERE x.state = s.state
                AND (@queue IS NULL OR x.queue = @queue)
                AND (@group IS NULL OR x.group_name = @group)
                AND (@schedule IS NULL OR x.schedule_name = @schedule)
                AND (@before = 0 OR x.id < @before)
              ORDER BY x.id DESC) AS p
JOIN dbo.readpast_tasks AS t ON t.id = p.id
ORDER BY t.id DESC
OPTION (RECOMPILE);
`,
	params: []string{"limit", "queue", "group", "schedule", "before"},
}

// queuesQuery lists queues (all, or the one named by @name) with their task
// counts per state, one row per (queue, state). Unfinished tasks are counted
// through the (state, id) and (queue, state, id) indexes, which reach only
// pending and running rows: the count grows with the work waiting, never
// with history. Finished tasks come from the readpast_counts rollup, kept by
// the transactions that finish, cancel, retry and purge them: the sum of a
// (queue, state)'s stripes, at most 16 rows (sql_rollups.go, "Stripes").
var queuesQuery = query{
	name: "queues",
	text: readCommitted + `WITH counts AS (
    SELECT t.queue, t.state, COUNT_BIG(*) AS n
    FROM dbo.readpast_tasks AS t
    WHERE t.state IN ('pending', 'running')
      AND (@name IS NULL OR t.queue = @name)
    GROUP BY t.queue, t.state
    UNION ALL
    SELECT c.queue, c.state, SUM(c.n)
    FROM dbo.readpast_counts AS c
    WHERE @name IS NULL OR c.queue = @name
    GROUP BY c.queue, c.state
    HAVING SUM(c.n) <> 0
), names AS (
    SELECT q.name
    FROM dbo.readpast_queues AS q
    WHERE @name IS NULL OR q.name = @name
    UNION
    SELECT k.queue FROM counts AS k
)
SELECT n.name, q.workers, q.max_running, COALESCE(q.paused, CAST(0 AS bit)), q.updated_at,
       COALESCE(q.updated_by, N''), c.state, c.n, COALESCE(q.default_target, N''), q.retry_interval_ms, q.retry_cap_ms,
       COALESCE(q.result_rows, 0)
FROM names AS n
LEFT JOIN dbo.readpast_queues AS q ON q.name = n.name
LEFT JOIN counts AS c ON c.queue = n.name
ORDER BY n.name
OPTION (RECOMPILE);
`,
	params: []string{"name"},
}

// groupsQuery lists the concurrency groups.
var groupsQuery = query{
	name: "groups",
	text: readCommitted + `SELECT g.name, g.max_running, g.running, g.updated_at, g.updated_by,
       (SELECT COUNT_BIG(*) FROM dbo.readpast_tasks AS t
         WHERE t.group_name = g.name AND t.state = 'pending') AS pending
FROM dbo.readpast_groups AS g
ORDER BY g.name;
`,
}

// taskAttemptsQuery reads one task's execution log, oldest first.
var taskAttemptsQuery = query{
	name: "task-attempts",
	text: readCommitted + `SELECT a.id, a.task_id, a.attempt, a.queue, a.node, a.worker, a.session_id,
       a.started_at, a.finished_at, a.duration_ms, a.outcome, a.error,
       a.rows_affected, a.messages
FROM dbo.readpast_attempts AS a
WHERE a.task_id = @task_id
ORDER BY a.attempt, a.id;
`,
	params: []string{"task_id"},
}

// compatibilityLevelSQL reads the current database's compatibility level.
const compatibilityLevelSQL = `SELECT CAST(compatibility_level AS int) FROM sys.databases WHERE database_id = DB_ID();`
