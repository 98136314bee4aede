package sqlserver

import (
	"strings"

	"readpast/internal/queue"
)

// The batches of bulk operations (docs/QUEUE.md, "Bulk operations") and of
// deleting one finished task. A bulk operation's row is written only by these
// batches, each in a transaction of its own that touches no other row (the
// audit insert aside), so it takes no place in the lock order of doc.go; the
// tasks a bulk operation changes are changed by the one-task batches (cancel,
// retry, delete-task), each in its own transaction.

const bulkColumnList = `b.id, b.action, b.selection, b.matched, b.done, b.skipped, b.cursor_id, b.created_at, b.created_by,
    b.lease_owner, b.lease_token, b.lease_expires_at, b.updated_at, b.finished_at, b.error`

// createBulkBatch writes a bulk operation and its audit row. Its cursor
// starts past the newest task: MAX(id) is the last key of the clustered
// primary key, one seek.
var createBulkBatch = query{
	name: "create-bulk",
	text: readCommitted + `SET NOCOUNT ON;
SET XACT_ABORT ON;
BEGIN TRAN;

DECLARE @id bigint;
INSERT INTO dbo.readpast_bulk_ops (action, selection, matched, cursor_id, created_by)
VALUES (@action, @selection, @matched,
        (SELECT COALESCE(MAX(t.id), 0) + 1 FROM dbo.readpast_tasks AS t), @actor);
SET @id = SCOPE_IDENTITY();

INSERT INTO dbo.readpast_audit (actor, action, target, detail)
VALUES (@actor, CONCAT(N'bulk_', @action), CONCAT(N'bulk ', @id), @detail);

COMMIT TRAN;
SELECT @id;
`,
	params: []string{"action", "selection", "matched", "actor", "detail"},
}

// claimBulkBatch leases the oldest unfinished bulk operation whose lease is
// free or expired. The row is read WITH (UPDLOCK, READPAST, ROWLOCK), as the
// task claim reads tasks: a row another node is claiming right now is
// skipped, never waited for, and the row taken stays locked until the update
// by primary key commits. The read goes through the filtered index of
// unfinished operations; lease_expires_at is not in it, so the plan looks the
// row up and the lock reaches the clustered key too.
var claimBulkBatch = query{
	name: "claim-bulk",
	text: readCommitted + `SET NOCOUNT ON;
SET XACT_ABORT ON;
BEGIN TRAN;

DECLARE @now datetime2(6) = SYSUTCDATETIME();
DECLARE @id bigint;
SELECT TOP (1) @id = b.id
FROM dbo.readpast_bulk_ops AS b WITH (UPDLOCK, READPAST, ROWLOCK)
WHERE b.finished_at IS NULL
  AND (b.lease_expires_at IS NULL OR b.lease_expires_at < @now)
ORDER BY b.id;

UPDATE dbo.readpast_bulk_ops WITH (ROWLOCK)
SET lease_owner      = @owner,
    lease_token      = lease_token + 1,
    lease_expires_at = DATEADD(millisecond, @lease_ms, @now),
    updated_at       = @now
WHERE id = @id;

COMMIT TRAN;
SELECT ` + bulkColumnList + `
FROM dbo.readpast_bulk_ops AS b
WHERE b.id = @id;
`,
	params: []string{"owner", "lease_ms"},
}

// advanceBulkBatch records a batch under the operation's lease (the token
// fences a node whose lease was taken over), and, at the end, the audit row
// with the counts. It changes one row by primary key.
var advanceBulkBatch = query{
	name: "advance-bulk",
	text: readCommitted + `SET NOCOUNT ON;
SET XACT_ABORT ON;
BEGIN TRAN;

DECLARE @now datetime2(6) = SYSUTCDATETIME();
DECLARE @done_now TABLE (actor nvarchar(128) NOT NULL, action varchar(10) NOT NULL, done bigint NOT NULL, skipped bigint NOT NULL);

UPDATE dbo.readpast_bulk_ops WITH (ROWLOCK)
SET cursor_id        = @cursor,
    done             = done + @done,
    skipped          = skipped + @skipped,
    lease_expires_at = CASE WHEN @finished = 1 THEN NULL ELSE DATEADD(millisecond, @lease_ms, @now) END,
    updated_at       = @now,
    finished_at      = CASE WHEN @finished = 1 THEN @now END,
    error            = @error
OUTPUT inserted.created_by, inserted.action, inserted.done, inserted.skipped INTO @done_now (actor, action, done, skipped)
WHERE id = @id AND lease_token = @token AND finished_at IS NULL;

IF @finished = 1
    INSERT INTO dbo.readpast_audit (actor, action, target, detail)
    SELECT d.actor, CONCAT(N'bulk_', d.action, N'_done'), CONCAT(N'bulk ', @id),
           CONCAT(N'done ', d.done, N', skipped ', d.skipped, CASE WHEN @error <> N'' THEN CONCAT(N': ', @error) ELSE N'' END)
    FROM @done_now AS d;

COMMIT TRAN;
SELECT COUNT(*) FROM @done_now;
`,
	params: []string{"id", "token", "cursor", "done", "skipped", "finished", "lease_ms", "error"},
}

// getBulkQuery reads one bulk operation by primary key.
var getBulkQuery = query{
	name: "get-bulk",
	text: readCommitted + `SELECT ` + bulkColumnList + `
FROM dbo.readpast_bulk_ops AS b
WHERE b.id = @id;
`,
	params: []string{"id"},
}

// bulksQuery reads a page of bulk operations, newest first: a backward seek
// on the clustered primary key.
var bulksQuery = query{
	name: "bulks",
	text: readCommitted + `SELECT TOP (@limit) ` + bulkColumnList + `
FROM dbo.readpast_bulk_ops AS b
WHERE b.id < @before
ORDER BY b.id DESC;
`,
	params: []string{"limit", "before"},
}

// deleteTaskBatch deletes a finished task, its execution-log rows, shrinks
// the finished counts and audits, in one transaction, in the lock order of
// doc.go: the task (3, UPDLOCK so that a retry or another delete of it queues
// behind), the counts (5), then the log rows and the audit row (6). It
// answers the task's state before (NULL: no such task) and whether it
// deleted it.
var deleteTaskBatch = query{
	name: "delete-task",
	text: readCommitted + `SET NOCOUNT ON;
SET XACT_ABORT ON;
BEGIN TRAN;

DECLARE @before varchar(10);
DECLARE @queue nvarchar(64);
DECLARE @deleted bit = 0;
` + rollupDeclarations + `
SELECT @before = t.state, @queue = t.queue
FROM dbo.readpast_tasks AS t WITH (UPDLOCK, ROWLOCK)
WHERE t.id = @id;

IF @before IN ('succeeded', 'failed', 'cancelled')
BEGIN
    DELETE FROM dbo.readpast_tasks WITH (ROWLOCK) WHERE id = @id;
    INSERT INTO @counted (queue, state, n) VALUES (@queue, @before, -1);
` + countRollup + `
    DELETE FROM dbo.readpast_attempts WITH (ROWLOCK) WHERE task_id = @id;
    DELETE FROM dbo.readpast_results WITH (ROWLOCK) WHERE task_id = @id;
    INSERT INTO dbo.readpast_audit (actor, action, target, detail)
    VALUES (@actor, N'delete', CONCAT(N'task ', @id), @before);
    SET @deleted = 1;
END

COMMIT TRAN;
SELECT @before, @deleted;
`,
	params: []string{"id", "actor"},
}

// countTasksQuery counts up to @limit tasks of the list's filters. A count
// needs no order, so TOP takes the first @limit rows of whichever index seek
// matches the filters ((state, id), (queue, state, id), (group_name, state,
// id), (schedule_name, state, id), (chain, stage, id)) and the count never
// reads more than @limit rows. With @pattern, the bodies of those rows are
// matched: a predicate is never moved below TOP, so the text does not make it
// read further. OPTION (RECOMPILE) as in listTasksQuery; it also drops the
// body from the plan when @pattern is NULL.
var countTasksQuery = query{
	name: "count-tasks",
	text: readCommitted + `SELECT COUNT_BIG(*)
FROM (SELECT TOP (@limit) t.id, t.body, t.name
      FROM dbo.readpast_tasks AS t
      WHERE (@state IS NULL OR t.state = @state)
        AND (@queue IS NULL OR t.queue = @queue)
        AND (@group IS NULL OR t.group_name = @group)
        AND (@chain IS NULL OR t.chain = @chain)
        AND (@schedule IS NULL OR t.schedule_name = @schedule)) AS c
WHERE @pattern IS NULL OR c.body LIKE @pattern ESCAPE '\' OR c.name LIKE @pattern ESCAPE '\'
OPTION (RECOMPILE);
`,
	params: []string{"limit", "state", "queue", "group", "chain", "schedule", "pattern"},
}

// searchWindowFilters are the list's filters on x, the window's rows.
const searchWindowFilters = `(@queue IS NULL OR x.queue = @queue)
                AND (@group IS NULL OR x.group_name = @group)
                AND (@schedule IS NULL OR x.schedule_name = @schedule)
                AND (@before = 0 OR x.id < @before)`

// searchBatch is a text search (queue.BulkStore.Search): the window, the
// @window newest ids of the list's filters below @before, read as
// listTasksQuery reads them (each filter by its index), is kept in a table
// variable; the first result set is its lowest id and size, the second the
// tasks of the window whose body matches @pattern, newest first, read by
// primary key. Nothing outside the window is read.
var searchBatch = searchQuery(query{
	name: "search-tasks",
	text: readCommitted + `SET NOCOUNT ON;
DECLARE @w TABLE (id bigint NOT NULL PRIMARY KEY);
INSERT INTO @w (id)
SELECT TOP (@window) x.id
FROM dbo.readpast_tasks AS x
WHERE (@state IS NULL OR x.state = @state)
  AND (@chain IS NULL OR x.chain = @chain)
  AND ` + searchWindowFilters + `
ORDER BY x.id DESC
OPTION (RECOMPILE);
` + searchTail,
	params: []string{"window", "limit", "state", "queue", "group", "chain", "schedule", "before", "pattern"},
})

// searchByStateBatch is searchBatch for a group's or a schedule's tasks of
// every state: the window merges the newest ids of one range per state, as
// listTasksByStateQuery does, instead of sorting the group's history.
var searchByStateBatch = searchQuery(query{
	name: "search-tasks-by-state",
	text: readCommitted + `SET NOCOUNT ON;
DECLARE @w TABLE (id bigint NOT NULL PRIMARY KEY);
INSERT INTO @w (id)
SELECT TOP (@window) p.id
FROM (VALUES ` + valueRows(queue.States) + `) AS s (state)
CROSS APPLY (SELECT TOP (@window) x.id
             FROM dbo.readpast_tasks AS x
             WHERE x.state = s.state
                AND ` + searchWindowFilters + `
             ORDER BY x.id DESC) AS p
ORDER BY p.id DESC
OPTION (RECOMPILE);
` + searchTail,
	params: []string{"window", "limit", "queue", "group", "schedule", "before", "pattern"},
})

// searchQuery puts the task columns into a search batch's tail.
func searchQuery(q query) query {
	q.text = strings.Replace(q.text, "%COLUMNS%", columns("t"), 1)
	return q
}

// searchTail answers a search from its window @w.
const searchTail = `SELECT MIN(w.id), COUNT(*) FROM @w AS w;
SELECT TOP (@limit) ` + "%COLUMNS%" + `
FROM @w AS w
JOIN dbo.readpast_tasks AS t ON t.id = w.id
WHERE t.body LIKE @pattern ESCAPE '\' OR t.name LIKE @pattern ESCAPE '\'
ORDER BY t.id DESC;
`
