package sqlserver

// The claim (docs/QUEUE.md, "Claiming"): claimCore bracketed by BEGIN TRAN /
// COMMIT TRAN, one round trip, ending with claimResult, which reads the table
// variable @out and so is the last thing the batch sends: no error can arrive
// after its rows. Store.Hold sends the same batch inside an outer BEGIN TRAN,
// so its COMMIT only leaves the nested level and the locks stay held.
//
// Parameters: @queue nvarchar, @owner nvarchar, @limit int (1-1000), @scan int
// (rows the candidate read may return), @lease_ms int, @token bigint (random,
// 63 bits; each task gets @token ^ id, a different fencing token per task).
//
// Locks, in the order taken: the queue row (capped queues only, UPDLOCK: the
// one place a claimer waits, before it holds anything), the candidates' group
// rows (UPDLOCK, READPAST: never waits), the claimed task rows (UPDLOCK,
// READPAST: never waits). A claimer takes group rows before task rows, the
// reverse of a finisher, but as it never waits for either it cannot close a
// cycle with one. It locks only the tasks it claims: candidates it passes over
// stay free for the next claimer, even while this transaction is open.

const claimPrologue = `SET NOCOUNT ON;
SET XACT_ABORT ON;
`

var claimCore = `
DECLARE @now datetime2(6) = SYSUTCDATETIME();
DECLARE @paused bit;
DECLARE @cap int;
DECLARE @running int;
DECLARE @n int = @limit;

-- Step 1: the queue row. Read it without a lock first: a queue with no cap is
-- never locked on claim, so its claimers share no row at all.
SELECT @paused = q.paused, @cap = q.max_running
FROM dbo.readpast_queues AS q
WHERE q.name = @queue;

IF @cap IS NOT NULL
BEGIN
    -- Capped: lock the queue row and count what runs, so two claimers cannot
    -- both fill the same free slots.
    SELECT @paused = q.paused, @cap = q.max_running
    FROM dbo.readpast_queues AS q WITH (UPDLOCK, ROWLOCK)
    WHERE q.name = @queue;

    IF @cap IS NOT NULL
    BEGIN
        SELECT @running = COUNT(*)
        FROM dbo.readpast_tasks AS t
        WHERE t.queue = @queue
          AND t.state = 'running';

        IF @cap - @running < @n
            SET @n = @cap - @running;
    END;
END;

IF @paused = 1 OR @n < 0
    SET @n = 0;

-- Step 2: candidates in claim order, read WITHOUT keeping locks. READPAST skips
-- rows another transaction holds (a task being claimed, cancelled, finished);
-- READCOMMITTEDLOCK makes it a locking read, which READPAST needs when the
-- database has READ_COMMITTED_SNAPSHOT ON, and which never sees uncommitted
-- rows. Nothing is decided here: step 4 locks and re-checks each row it takes.
-- The predicates match the filtered index readpast_tasks_claim literally.
-- The group pre-filter drops tasks whose group is full by its committed
-- counter; reading past a locked group row is safe because step 3 decides
-- admission with that row locked.
DECLARE @cand TABLE (
    seq        int           NOT NULL PRIMARY KEY,
    id         bigint        NOT NULL UNIQUE,
    group_name nvarchar(128) NULL,
    tried      bit           NOT NULL
);

IF @n > 0
BEGIN
    INSERT INTO @cand (seq, id, group_name, tried)
    SELECT TOP (@scan)
           ROW_NUMBER() OVER (ORDER BY t.priority, t.available_at, t.id),
           t.id, t.group_name, 0
    FROM dbo.readpast_tasks AS t WITH (READPAST, READCOMMITTEDLOCK)
    WHERE t.queue = @queue
      AND t.state = 'pending'
      AND t.chain_wait = 0
      AND t.available_at <= @now
      AND NOT EXISTS (
            SELECT 1
            FROM dbo.readpast_groups AS pg WITH (READPAST, READCOMMITTEDLOCK)
            WHERE pg.name = t.group_name
              AND pg.running >= pg.max_running)
    ORDER BY t.priority, t.available_at, t.id;
END;

-- Step 3: lock the candidates' group rows, skipping (READPAST) any row another
-- claimer or finisher holds: its tasks are simply not admitted this time.
-- FORCESEEK: only those rows are read. Admission reads only these locked
-- counters, never other tasks' rows, so nothing uncommitted or skipped decides it.
DECLARE @grp TABLE (
    name  nvarchar(128) NOT NULL PRIMARY KEY,
    free  int           NOT NULL,
    taken int           NOT NULL
);

INSERT INTO @grp (name, free, taken)
SELECT g.name, g.max_running - g.running, 0
FROM dbo.readpast_groups AS g WITH (UPDLOCK, ROWLOCK, READPAST, FORCESEEK)
WHERE g.name IN (SELECT c.group_name FROM @cand AS c WHERE c.group_name IS NOT NULL);

-- Step 4: admit and claim, in up to three rounds. A round plans, in claim
-- order, at most (free - taken) untried candidates per group and at most
-- (@n - claimed) in all; ranks inside a group follow claim order, so the cut
-- keeps each group's first. It then claims exactly those rows through a CTE
-- with UPDLOCK, READPAST, ROWLOCK (the seed's pattern): a row another
-- transaction holds is skipped, a row no longer claimable (claimed and
-- committed by someone else since step 2) fails the re-check, and the next
-- round plans further candidates instead. FORCESEEK: the rows are found by
-- primary key, so nothing else is locked.
DECLARE @plan TABLE (id bigint NOT NULL PRIMARY KEY);
DECLARE @claimed int = 0;
DECLARE @round int = 0;
DECLARE @out TABLE (
    id                  bigint        NOT NULL PRIMARY KEY,
    queue               nvarchar(64)  NOT NULL,
    body                nvarchar(max) NOT NULL,
    priority            smallint      NOT NULL,
    available_at        datetime2(6)  NOT NULL,
    group_name          nvarchar(128) NULL,
    chain               nvarchar(128) NULL,
    stage               int           NOT NULL,
    chain_wait          bit           NOT NULL,
    continue_on_failure bit           NOT NULL,
    max_attempts        int           NOT NULL,
    timeout_ms          bigint        NOT NULL,
    transactional       bit           NOT NULL,
    state               varchar(10)   NOT NULL,
    attempts            int           NOT NULL,
    lease_owner         nvarchar(128) NULL,
    lease_token         bigint        NULL,
    lease_expires_at    datetime2(6)  NULL,
    session_id          nvarchar(64)  NULL,
    cancel_requested    bit           NOT NULL,
    created_at          datetime2(6)  NOT NULL,
    created_by          nvarchar(128) NOT NULL,
    started_at          datetime2(6)  NULL,
    finished_at         datetime2(6)  NULL,
    last_error          nvarchar(max) NULL
);

WHILE @claimed < @n AND @round < 3
BEGIN
    SET @round = @round + 1;
    DELETE FROM @plan;

    WITH ranked AS (
        SELECT c.id, c.seq, c.group_name,
               ROW_NUMBER() OVER (PARTITION BY c.group_name ORDER BY c.seq) AS group_rank
        FROM @cand AS c
        WHERE c.tried = 0
    )
    INSERT INTO @plan (id)
    SELECT TOP (@n - @claimed) r.id
    FROM ranked AS r
    LEFT JOIN @grp AS g ON g.name = r.group_name
    WHERE r.group_name IS NULL
       OR r.group_rank <= g.free - g.taken
    ORDER BY r.seq;

    IF @@ROWCOUNT = 0
        BREAK;

    UPDATE c
    SET c.tried = 1
    FROM @cand AS c
    JOIN @plan AS p ON p.id = c.id;

    WITH pick AS (
        SELECT t.*
        FROM dbo.readpast_tasks AS t WITH (UPDLOCK, READPAST, ROWLOCK, FORCESEEK)
        WHERE t.id IN (SELECT p.id FROM @plan AS p)
          AND t.state = 'pending'
          AND t.chain_wait = 0
          AND t.available_at <= @now
    )
    UPDATE pick
    SET state            = 'running',
        attempts         = attempts + 1,
        lease_owner      = @owner,
        lease_token      = @token ^ id,
        lease_expires_at = DATEADD(millisecond, @lease_ms, @now),
        started_at       = @now,
        session_id       = NULL,
        cancel_requested = 0
    OUTPUT ` + columns("inserted") + `
    INTO @out (` + columnList() + `);

    SELECT @claimed = COUNT(*) FROM @out;

    UPDATE g
    SET g.taken = x.taken
    FROM @grp AS g
    JOIN (
        SELECT o.group_name, COUNT(*) AS taken
        FROM @out AS o
        WHERE o.group_name IS NOT NULL
        GROUP BY o.group_name
    ) AS x ON x.group_name = g.name;
END;

-- The group counters; their rows are locked since step 3.
UPDATE g
SET g.running = g.running + x.taken
FROM dbo.readpast_groups AS g WITH (ROWLOCK, FORCESEEK)
JOIN @grp AS x ON x.name = g.name
WHERE x.taken > 0;
`

var claimResult = `
SELECT ` + columns("o") + `
FROM @out AS o
ORDER BY o.priority, o.available_at, o.id;
`

// claimBatch is the whole claim in one round trip.
var claimBatch = query{
	name:   "claim",
	text:   claimPrologue + "BEGIN TRAN;\n" + claimCore + "\nCOMMIT TRAN;\n" + claimResult,
	params: []string{"queue", "owner", "limit", "scan", "lease_ms", "token"},
}
