package sqlserver

// enqueueBatch writes a whole batch of tasks in one round trip. @tasks is a
// JSON array (see enqueue.go, jsonTask) parsed by OPENJSON; the array index
// keeps the caller's order. The result is, in input order, each task's id and
// whether it is an unfinished task that already held its unique key
// (duplicate: nothing was written for it).
//
// Two transactions, both in the documented lock order (queues, chains, tasks,
// groups):
//
//  1. Only when the batch names a queue, chain or group that has no row yet:
//     the missing rows are inserted in a short transaction of their own. Plain
//     inserts of missing keys take no range lock, so no claimer ever waits on
//     this; the first reads that find the names existing take no lasting
//     lock either. Two enqueuers of the same new name: the second waits for
//     the first's key, then fails on it (2627) and Enqueue runs the whole batch
//     again, which finds the row. (A probe WITH (UPDLOCK, HOLDLOCK) would take
//     a key-range lock on the next existing row instead, and the claimers of a
//     capped queue locking that row would wait for the enqueue.)
//  2. The tasks: the chain rows locked (UPDLOCK: the chains are recomputed
//     before commit), the tasks inserted, the chains refreshed.
//
// Unique keys: a keyed task whose key an unfinished task of its queue holds
// is that task, found through the filtered unique index readpast_tasks_unique;
// two tasks of one batch with one key are one task. Two enqueuers of one new
// key at once: the index makes the second wait for the first's insert, then
// fail on it (2601), and Enqueue runs the batch again, which finds the task.
// The index cannot make claimers wait on each other: a claim moves a task
// from pending to running, both inside the index's filter, with the same key,
// so the only row its maintenance meets is the task's own.
//
// New ids are in input order: identity values of an INSERT … SELECT … ORDER BY
// are assigned in that ORDER BY (Microsoft's INSERT documentation), and the
// batch avoids MERGE on readpast_tasks because of MERGE's history of bugs
// with filtered indexes.
var enqueueBatch = query{
	name: "enqueue",
	text: readCommitted + `SET NOCOUNT ON;
SET XACT_ABORT ON;

DECLARE @now datetime2(6) = SYSUTCDATETIME();
DECLARE @src TABLE (
    ord                 int           NOT NULL PRIMARY KEY,
    queue               nvarchar(64)  NOT NULL,
    body                nvarchar(max) NOT NULL,
    priority            smallint      NOT NULL,
    available_at        datetime2(6)  NOT NULL,
    group_name          nvarchar(128) NULL,
    chain               nvarchar(128) NULL,
    stage               int           NOT NULL,
    max_attempts        int           NOT NULL,
    timeout_ms          bigint        NOT NULL,
    transactional       bit           NOT NULL,
    continue_on_failure bit           NOT NULL,
    created_by          nvarchar(128) NOT NULL,
    unique_key          nvarchar(128) NULL,
    target              nvarchar(64)  NOT NULL,
    retry_interval_ms   bigint        NULL,
    retry_cap_ms        bigint        NULL,
    name                nvarchar(400) NULL,
    task_id             bigint        NULL,
    duplicate           bit           NOT NULL
);
DECLARE @chains TABLE (
    name                nvarchar(128) NOT NULL PRIMARY KEY,
    continue_on_failure bit           NOT NULL
);
DECLARE @ids TABLE (id bigint NOT NULL PRIMARY KEY);
` + chainDeclarations + `
-- available_at: an absolute ISO 8601 time (UTC, read the same whatever the
-- session's DATEFORMAT or LANGUAGE), or now + delay on the database clock.
INSERT INTO @src
    (ord, queue, body, priority, available_at, group_name, chain, stage, max_attempts,
     timeout_ms, transactional, continue_on_failure, created_by, unique_key, target, retry_interval_ms, retry_cap_ms, name, duplicate)
SELECT CAST(a.[key] AS int),
       j.queue, j.body, j.priority,
       CASE WHEN j.available_at IS NOT NULL
            THEN CAST(j.available_at AS datetime2(6))
            ELSE DATEADD(microsecond, j.delay_us, DATEADD(second, j.delay_s, @now))
       END,
       j.group_name, j.chain, j.stage, j.max_attempts, j.timeout_ms,
       j.transactional, j.continue_on_failure, j.created_by, j.unique_key, COALESCE(j.target, N''), j.retry_interval_ms, j.retry_cap_ms, j.name, 0
FROM OPENJSON(@tasks) AS a
CROSS APPLY OPENJSON(a.value) WITH (
    queue               nvarchar(64)  '$.queue',
    body                nvarchar(max) '$.body',
    priority            smallint      '$.priority',
    available_at        nvarchar(40)  '$.available_at',
    delay_s             int           '$.delay_s',
    delay_us            int           '$.delay_us',
    group_name          nvarchar(128) '$.group',
    chain               nvarchar(128) '$.chain',
    stage               int           '$.stage',
    max_attempts        int           '$.max_attempts',
    timeout_ms          bigint        '$.timeout_ms',
    transactional       bit           '$.transactional',
    continue_on_failure bit           '$.continue_on_failure',
    created_by          nvarchar(128) '$.created_by',
    unique_key          nvarchar(128) '$.unique_key',
    target              nvarchar(64)  '$.target',
    retry_interval_ms   bigint        '$.retry_interval_ms',
    retry_cap_ms        bigint        '$.retry_cap_ms',
    name                nvarchar(400) '$.name'
) AS j;

-- Transaction 1: names that have no row yet.
IF EXISTS (SELECT 1 FROM @src AS s
           WHERE NOT EXISTS (SELECT 1 FROM dbo.readpast_queues AS q WHERE q.name = s.queue))
   OR EXISTS (SELECT 1 FROM @src AS s
              WHERE s.chain IS NOT NULL
                AND NOT EXISTS (SELECT 1 FROM dbo.readpast_chains AS c WHERE c.name = s.chain))
   OR EXISTS (SELECT 1 FROM @src AS s
              WHERE s.group_name IS NOT NULL
                AND NOT EXISTS (SELECT 1 FROM dbo.readpast_groups AS g WHERE g.name = s.group_name))
BEGIN
    BEGIN TRAN;

    INSERT INTO dbo.readpast_queues (name)
    SELECT DISTINCT s.queue
    FROM @src AS s
    WHERE NOT EXISTS (SELECT 1 FROM dbo.readpast_queues AS q WHERE q.name = s.queue);

    INSERT INTO dbo.readpast_chains (name, continue_on_failure)
    SELECT DISTINCT s.chain, 0
    FROM @src AS s
    WHERE s.chain IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM dbo.readpast_chains AS c WHERE c.name = s.chain);

    INSERT INTO dbo.readpast_groups (name)
    SELECT DISTINCT s.group_name
    FROM @src AS s
    WHERE s.group_name IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM dbo.readpast_groups AS g WHERE g.name = s.group_name);

    COMMIT TRAN;
END;

-- Transaction 2: the tasks.
BEGIN TRAN;

-- Lock order 2: every chain of the batch, by primary key. continue_on_failure
-- is a property of the chain: set on any task, it sticks for all of them.
INSERT INTO @chains (name, continue_on_failure)
SELECT s.chain, MAX(CAST(s.continue_on_failure AS int))
FROM @src AS s
WHERE s.chain IS NOT NULL
GROUP BY s.chain;

-- First every chain row, locked in one read (a second enqueuer of the same
-- chains waits here, before it holds any of them); only then the flag, on
-- rows already held. Locking the flagged chains first would let two
-- enqueuers of chains A and B, one flagging B only, each hold one and wait
-- for the other.
UPDATE c
SET c.continue_on_failure = CASE WHEN c.continue_on_failure = 1 OR x.continue_on_failure = 1 THEN 1 ELSE 0 END
FROM @chains AS c
JOIN dbo.readpast_chains AS x WITH (UPDLOCK, ROWLOCK, FORCESEEK) ON x.name = c.name;

UPDATE x
SET x.continue_on_failure = 1
FROM dbo.readpast_chains AS x WITH (UPDLOCK, ROWLOCK, FORCESEEK)
JOIN @chains AS c ON c.name = x.name
WHERE c.continue_on_failure = 1
  AND x.continue_on_failure = 0;

UPDATE s
SET s.continue_on_failure = c.continue_on_failure
FROM @src AS s
JOIN @chains AS c ON c.name = s.chain;

-- Unique keys: held by an unfinished task of the queue, or by an earlier task
-- of this batch.
UPDATE s
SET s.task_id = t.id, s.duplicate = 1
FROM @src AS s
JOIN dbo.readpast_tasks AS t
  ON t.queue = s.queue
 AND t.unique_key = s.unique_key
 AND t.unique_key IS NOT NULL
 AND t.state IN ('pending', 'running')
WHERE s.unique_key IS NOT NULL;

UPDATE s
SET s.duplicate = 1
FROM @src AS s
WHERE s.unique_key IS NOT NULL
  AND s.duplicate = 0
  AND EXISTS (SELECT 1 FROM @src AS f
              WHERE f.queue = s.queue AND f.unique_key = s.unique_key AND f.ord < s.ord);

-- Lock order 3: the new tasks, then the chains' pending tasks. ROWLOCK: a
-- large batch must not take page locks, which READPAST cannot read past. A
-- task due later is written delayed: out of the claim's indexes until due.
INSERT INTO dbo.readpast_tasks WITH (ROWLOCK)
    (queue, body, priority, available_at, delayed, group_name, chain, stage, chain_wait,
     continue_on_failure, max_attempts, timeout_ms, transactional, created_by, unique_key, target, retry_interval_ms, retry_cap_ms, name)
OUTPUT inserted.id INTO @ids (id)
SELECT s.queue, s.body, s.priority, s.available_at,
       CASE WHEN s.available_at > @now THEN 1 ELSE 0 END,
       s.group_name, s.chain, s.stage, 0,
       s.continue_on_failure, s.max_attempts, s.timeout_ms, s.transactional, s.created_by, s.unique_key, s.target,
       s.retry_interval_ms, s.retry_cap_ms, s.name
FROM @src AS s
WHERE s.duplicate = 0
ORDER BY s.ord;

UPDATE s
SET s.task_id = i.id
FROM @src AS s
JOIN (SELECT x.ord, ROW_NUMBER() OVER (ORDER BY x.ord) AS rn FROM @src AS x WHERE x.duplicate = 0) AS o ON o.ord = s.ord
JOIN (SELECT y.id, ROW_NUMBER() OVER (ORDER BY y.id) AS rn FROM @ids AS y) AS i ON i.rn = o.rn;

UPDATE d
SET d.task_id = f.task_id
FROM @src AS d
JOIN @src AS f ON f.queue = d.queue AND f.unique_key = d.unique_key AND f.duplicate = 0
WHERE d.duplicate = 1
  AND d.task_id IS NULL;
` + refreshChains + `
COMMIT TRAN;

SELECT s.task_id, s.duplicate FROM @src AS s ORDER BY s.ord;
`,
	params: []string{"tasks"},
}
