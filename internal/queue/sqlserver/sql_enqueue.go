package sqlserver

// enqueueBatch writes a whole batch of tasks in one transaction and one round
// trip. @tasks is a JSON array (see enqueue.go, jsonTask) parsed by OPENJSON;
// the array index keeps the caller's order. The result is the new ids in
// ascending order, which is the input order: identity values of an
// INSERT ... SELECT ... ORDER BY are assigned in that ORDER BY (documented), and
// the batch avoids MERGE on readpast_tasks because of MERGE's history of bugs
// with filtered indexes.
//
// Rows are created and locked in the documented lock order: queues, chains,
// tasks, groups. Queue and group rows that already exist are not locked at all
// (a plain read finds them), so enqueue never holds up claimers of a capped
// queue or a group; a name that looks new is inserted under UPDLOCK, HOLDLOCK,
// whose key-range lock makes a second enqueuer of the same new name wait and
// then see it, instead of failing on the primary key. Chain rows are always
// locked, because the chain is recomputed before commit.
var enqueueBatch = query{
	name: "enqueue",
	text: `SET NOCOUNT ON;
SET XACT_ABORT ON;
BEGIN TRAN;

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
    created_by          nvarchar(128) NOT NULL
);
DECLARE @new_queues TABLE (name nvarchar(64) NOT NULL PRIMARY KEY);
DECLARE @new_groups TABLE (name nvarchar(128) NOT NULL PRIMARY KEY);
DECLARE @chains TABLE (
    name                nvarchar(128) NOT NULL PRIMARY KEY,
    continue_on_failure bit           NOT NULL
);
DECLARE @ids TABLE (id bigint NOT NULL PRIMARY KEY);

-- available_at: an absolute ISO 8601 time (UTC, read the same whatever the
-- session's DATEFORMAT or LANGUAGE), or now + delay on the database clock.
INSERT INTO @src
    (ord, queue, body, priority, available_at, group_name, chain, stage,
     max_attempts, timeout_ms, transactional, continue_on_failure, created_by)
SELECT CAST(a.[key] AS int),
       j.queue, j.body, j.priority,
       CASE WHEN j.available_at IS NOT NULL
            THEN CAST(j.available_at AS datetime2(6))
            ELSE DATEADD(microsecond, j.delay_us, DATEADD(second, j.delay_s, @now))
       END,
       j.group_name, j.chain, j.stage, j.max_attempts, j.timeout_ms,
       j.transactional, j.continue_on_failure, j.created_by
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
    created_by          nvarchar(128) '$.created_by'
) AS j;

-- Lock order 1: queue rows, new names only.
INSERT INTO @new_queues (name)
SELECT DISTINCT s.queue
FROM @src AS s
WHERE NOT EXISTS (SELECT 1 FROM dbo.readpast_queues AS q WHERE q.name = s.queue);

INSERT INTO dbo.readpast_queues (name)
SELECT nq.name
FROM @new_queues AS nq
WHERE NOT EXISTS (
    SELECT 1
    FROM dbo.readpast_queues AS q WITH (UPDLOCK, HOLDLOCK, FORCESEEK)
    WHERE q.name = nq.name);

-- Lock order 2: every chain of the batch. The probe's UPDLOCK locks the rows
-- that exist, the insert the ones that do not. continue_on_failure is a
-- property of the chain: set on any task, it sticks for all of them.
INSERT INTO @chains (name, continue_on_failure)
SELECT s.chain, MAX(CAST(s.continue_on_failure AS int))
FROM @src AS s
WHERE s.chain IS NOT NULL
GROUP BY s.chain;

INSERT INTO dbo.readpast_chains (name, continue_on_failure)
SELECT c.name, c.continue_on_failure
FROM @chains AS c
WHERE NOT EXISTS (
    SELECT 1
    FROM dbo.readpast_chains AS x WITH (UPDLOCK, HOLDLOCK, FORCESEEK)
    WHERE x.name = c.name);

UPDATE x
SET x.continue_on_failure = 1
FROM dbo.readpast_chains AS x WITH (ROWLOCK, FORCESEEK)
JOIN @chains AS c ON c.name = x.name
WHERE c.continue_on_failure = 1
  AND x.continue_on_failure = 0;

UPDATE s
SET s.continue_on_failure = x.continue_on_failure
FROM @src AS s
JOIN dbo.readpast_chains AS x WITH (FORCESEEK) ON x.name = s.chain;

-- Lock order 3: the new tasks, then the chains' pending tasks. ROWLOCK: a
-- large batch must not take page locks, which READPAST cannot read past.
INSERT INTO dbo.readpast_tasks WITH (ROWLOCK)
    (queue, body, priority, available_at, group_name, chain, stage, chain_wait,
     continue_on_failure, max_attempts, timeout_ms, transactional, created_by)
OUTPUT inserted.id INTO @ids (id)
SELECT s.queue, s.body, s.priority, s.available_at, s.group_name, s.chain, s.stage, 0,
       s.continue_on_failure, s.max_attempts, s.timeout_ms, s.transactional, s.created_by
FROM @src AS s
ORDER BY s.ord;
` + refreshChains + `
-- Lock order 4: group rows, new names only.
INSERT INTO @new_groups (name)
SELECT DISTINCT s.group_name
FROM @src AS s
WHERE s.group_name IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM dbo.readpast_groups AS g WHERE g.name = s.group_name);

INSERT INTO dbo.readpast_groups (name)
SELECT ng.name
FROM @new_groups AS ng
WHERE NOT EXISTS (
    SELECT 1
    FROM dbo.readpast_groups AS g WITH (UPDLOCK, HOLDLOCK, FORCESEEK)
    WHERE g.name = ng.name);

COMMIT TRAN;

SELECT i.id FROM @ids AS i ORDER BY i.id;
`,
	params: []string{"tasks"},
}
