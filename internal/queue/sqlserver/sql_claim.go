package sqlserver

// The claim (docs/QUEUE.md, "Claiming" and "Claiming behind a backlog"):
// claimCore bracketed by BEGIN TRAN / COMMIT TRAN, one round trip, ending with
// claimResult, which reads the table variable @out and so is the last thing
// the batch sends: no error can arrive after its rows. Store.Hold sends the
// same batch inside an outer BEGIN TRAN, so its COMMIT only leaves the nested
// level and the locks stay held.
//
// Parameters: @queue nvarchar, @owner nvarchar, @limit int (1-1000),
// @lease_ms int, @token bigint (random, 63 bits; each task gets @token ^ id, a
// different fencing token per task), @targets nvarchar(max): the targets the
// node serves as |a|b| ('' among them as ||), NULL for any target.
//
// Targets (docs/TARGETS.md, "Flat behind another target's backlog"): the
// ready indexes put the target right after the queue, and every read of ready
// tasks is a seek of one target's range, for each target in @tg (those of
// @targets, or, for NULL, those with ready tasks in the queue, found by a
// skip scan, one probe per target). Ready tasks of a target the claim does
// not serve are never read, so never locked, however many are ahead of its
// own. The locking read takes, of each target's range, as many rows as that
// target has among the first @n of all targets (read first, locking
// nothing), skipping rows others hold, so a claimer still takes @n when
// others hold the first ones.
//
// What it reads: the queue row; the due delayed tasks of the queue (index
// readpast_tasks_delayed); the first ungrouped ready tasks of each target
// (readpast_tasks_ready_target); and, only when grouped tasks of its targets
// are ready, the groups with a free slot (readpast_groups_free, which holds no
// full group) with one probe each and target for a ready task of the queue,
// and the first tasks of those groups and targets
// (readpast_tasks_ready_grouped_target). Tasks that cannot run now (delayed,
// waiting for their chain, in a full group, of another target) are never
// read past, so a backlog of them does not slow the claim down (SPEC §9).
//
// Every read of readpast_tasks names the filtered index it means
// (INDEX(...)): the claim's plan must not depend on how the optimizer judges
// a queue's rows against the whole table's (one queue's million delayed
// tasks, another's full group), where a row goal can make a scan look cheap.
//
// What it locks, in the order taken: the queue row (capped queues only,
// UPDLOCK: the one place a claimer waits, before it holds anything); the due
// delayed tasks it makes ready (READPAST: never waits); the group rows of the
// planned tasks it may admit, and no other group (UPDLOCK, READPAST: never
// waits); the task rows it takes (READPAST: never waits). A claimer takes
// group rows before task rows, the reverse of a finisher, but as it never
// waits for either it cannot close a cycle with one. Candidates it passes over
// stay unlocked for the next claimer, even while this transaction is open.
//
// Why two statements where the seed's pattern has one (an UPDATE of a CTE
// with TOP and ORDER BY): the rows to take are read in claim order with
// UPDLOCK, READPAST, ROWLOCK (the read that locks them, skipping what others
// hold), and then updated by primary key, re-checked. In one transaction this
// is the same as the CTE form on SQL Server, and it is also a form Babelfish
// for PostgreSQL accepts (it cannot UPDATE through a CTE). The locking read
// names lease_token, which is not in the index it seeks, so its plan looks
// each row up in the clustered index and locks the clustered key too: the
// claim then holds its rows the way every other writer finds them (by primary
// key), and a cancel or finish of the same row meets the claimer's lock first
// instead of closing a cycle with it on the index key.

const claimPrologue = `SET NOCOUNT ON;
SET XACT_ABORT ON;
`

var claimCore = `
DECLARE @now datetime2(6) = SYSUTCDATETIME();
DECLARE @paused bit;
DECLARE @cap int;
DECLARE @running int;
DECLARE @n int = @limit;
DECLARE @plan_n int = 2 * @limit + 16;
DECLARE @claimed int = 0;
DECLARE @round int = 0;
DECLARE @want_n int;
DECLARE @need_n int;
DECLARE @stop int;

-- The plan and its bookkeeping. @tg: the targets whose ranges the claim
-- reads; @open: groups with free slots by their committed counters; @groups:
-- those of them with ready tasks of a target in the queue, by target;
-- @share: how many of the first @n ungrouped tasks each target has;
-- @locked: group rows this claim holds,
-- with their locked free slots and what it took; @skipped: group rows another
-- transaction holds, not admitted this time.
DECLARE @tg TABLE (name nvarchar(64) NOT NULL);
DECLARE @t nvarchar(64);
DECLARE @next nvarchar(64);
DECLARE @at int;
DECLARE @open TABLE (name nvarchar(128) NOT NULL PRIMARY KEY, free int NOT NULL);
DECLARE @groups TABLE (name nvarchar(128) NOT NULL, target nvarchar(64) NOT NULL, free int NOT NULL);
DECLARE @share TABLE (name nvarchar(64) NOT NULL, k int NOT NULL);
DECLARE @cand TABLE (
    id           bigint        NOT NULL PRIMARY KEY,
    priority     smallint      NOT NULL,
    available_at datetime2(6)  NOT NULL,
    group_name   nvarchar(128) NULL,
    free         int           NOT NULL
);
DECLARE @plan TABLE (
    seq        int           NOT NULL PRIMARY KEY,
    id         bigint        NOT NULL UNIQUE,
    group_name nvarchar(128) NULL,
    free       int           NOT NULL,
    tried      bit           NOT NULL
);
DECLARE @locked TABLE (name nvarchar(128) NOT NULL PRIMARY KEY, free int NOT NULL, taken int NOT NULL);
DECLARE @skipped TABLE (name nvarchar(128) NOT NULL PRIMARY KEY);
DECLARE @need TABLE (name nvarchar(128) NOT NULL PRIMARY KEY);
DECLARE @take TABLE (id bigint NOT NULL PRIMARY KEY, lease_token bigint NULL);
DECLARE @due TABLE (id bigint NOT NULL PRIMARY KEY, lease_token bigint NULL);
DECLARE @out TABLE (
` + taskTableColumns + `
);

-- Step 1: the queue row. Read it without a lock first: a queue with no cap is
-- never locked on claim, so its claimers share no row at all.
SELECT @paused = q.paused, @cap = q.max_running
FROM dbo.readpast_queues AS q
WHERE q.name = @queue;

IF @cap IS NOT NULL AND @paused = 0
BEGIN
    -- Capped: lock the queue row and count what runs, so two claimers cannot
    -- both fill the same free slots. The count is a locking read that waits
    -- for a finisher's commit: skipping a row would under-count and overfill.
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

-- Step 2: due delayed tasks of the queue become ready, at most 1,000 a claim,
-- skipping rows others hold. Found through readpast_tasks_delayed (the
-- predicates match its filter literally); most claims find none in one probe.
-- Read and locked first, then updated by key, as the claim's tasks are.
IF @n > 0
BEGIN
    INSERT INTO @due (id, lease_token)
    SELECT TOP (1000) d.id, d.lease_token
    FROM dbo.readpast_tasks AS d WITH (UPDLOCK, READPAST, ROWLOCK, INDEX(readpast_tasks_delayed))
    WHERE d.queue = @queue
      AND d.state = 'pending'
      AND d.delayed = 1
      AND d.available_at <= @now
    ORDER BY d.available_at;

    IF @@ROWCOUNT > 0
    BEGIN
        UPDATE t
        SET t.delayed = 0
        FROM dbo.readpast_tasks AS t WITH (ROWLOCK, FORCESEEK)
        WHERE t.id IN (SELECT d.id FROM @due AS d)
          AND t.state = 'pending'
          AND t.delayed = 1;
    END;
END;

-- The targets whose ranges the claim reads. @targets is |a|b| (each name
-- once, queue.CheckClaim; '' among them as ||): split at each '|'. NULL:
-- the targets with ready tasks in the queue, by a skip scan of each ready
-- index, one probe per target (each reads the first entry after the last
-- target found), locking nothing as the plan's reads below.
IF @n > 0 AND @targets IS NOT NULL
BEGIN
    SET @at = CHARINDEX(N'|', @targets);
    WHILE @at > 0 AND CHARINDEX(N'|', @targets, @at + 1) > 0
    BEGIN
        SET @next = SUBSTRING(@targets, @at + 1, CHARINDEX(N'|', @targets, @at + 1) - @at - 1);
        IF NOT EXISTS (SELECT 1 FROM @tg AS x WHERE x.name = @next)
            INSERT INTO @tg (name) VALUES (@next);
        SET @at = CHARINDEX(N'|', @targets, @at + 1);
    END;
END
ELSE IF @n > 0
BEGIN
    SET @t = NULL;
    SELECT TOP (1) @t = t.target
    FROM dbo.readpast_tasks AS t WITH (READPAST, READCOMMITTEDLOCK, INDEX(readpast_tasks_ready_target))
    WHERE t.queue = @queue AND t.state = 'pending' AND t.chain_wait = 0 AND t.delayed = 0 AND t.group_name IS NULL
    ORDER BY t.target;
    WHILE @t IS NOT NULL
    BEGIN
        INSERT INTO @tg (name) VALUES (@t);
        SET @next = NULL;
        SELECT TOP (1) @next = t.target
        FROM dbo.readpast_tasks AS t WITH (READPAST, READCOMMITTEDLOCK, INDEX(readpast_tasks_ready_target))
        WHERE t.queue = @queue AND t.state = 'pending' AND t.chain_wait = 0 AND t.delayed = 0 AND t.group_name IS NULL
          AND t.target > @t
        ORDER BY t.target;
        SET @t = @next;
    END;

    SET @t = NULL;
    SELECT TOP (1) @t = t.target
    FROM dbo.readpast_tasks AS t WITH (READPAST, READCOMMITTEDLOCK, INDEX(readpast_tasks_ready_grouped_target))
    WHERE t.queue = @queue AND t.state = 'pending' AND t.chain_wait = 0 AND t.delayed = 0 AND t.group_name IS NOT NULL
    ORDER BY t.target;
    WHILE @t IS NOT NULL
    BEGIN
        IF NOT EXISTS (SELECT 1 FROM @tg AS x WHERE x.name = @t)
            INSERT INTO @tg (name) VALUES (@t);
        SET @next = NULL;
        SELECT TOP (1) @next = t.target
        FROM dbo.readpast_tasks AS t WITH (READPAST, READCOMMITTEDLOCK, INDEX(readpast_tasks_ready_grouped_target))
        WHERE t.queue = @queue AND t.state = 'pending' AND t.chain_wait = 0 AND t.delayed = 0 AND t.group_name IS NOT NULL
          AND t.target > @t
        ORDER BY t.target;
        SET @t = @next;
    END;
END;

IF NOT EXISTS (SELECT 1 FROM @tg)
    SET @n = 0;

-- Step 3, the plan's groups: those that have a free slot by their committed
-- counters and a ready task of a target in @tg in this queue. Read in two statements so that
-- the free groups drive: first the groups with a free slot
-- (readpast_groups_free holds only those rows; a full group is not in it),
-- then, for each of them and each target, one seek in the grouped index for
-- a ready task of the queue (TOP (1) in an APPLY: a probe per outer row,
-- which PostgreSQL under Babelfish also plans as one, where it planned an
-- EXISTS as a semi join over the queue's whole range). Locking nothing (READPAST with READCOMMITTEDLOCK: a locking read
-- that skips what others hold and keeps no lock; a group row another claimer
-- or a finisher holds is not admitted this time). So full groups cost a claim
-- nothing, whatever their number and backlog; the cost grows with the groups
-- that have a free slot. A queue with no grouped task ready skips both after
-- one probe.
IF @n > 0 AND EXISTS (
    SELECT 1
    FROM @tg AS x
    CROSS APPLY (
        SELECT TOP (1) t.id
        FROM dbo.readpast_tasks AS t WITH (READPAST, READCOMMITTEDLOCK, INDEX(readpast_tasks_ready_grouped_target))
        WHERE t.queue = @queue
          AND t.target = x.name
          AND t.state = 'pending'
          AND t.chain_wait = 0
          AND t.delayed = 0
          AND t.group_name IS NOT NULL
    ) AS a)
BEGIN
    INSERT INTO @open (name, free)
    SELECT g.name, g.max_running - g.running
    FROM dbo.readpast_groups AS g WITH (READPAST, READCOMMITTEDLOCK, INDEX(readpast_groups_free))
    WHERE g.has_free = 1
      AND g.running < g.max_running;

    IF @@ROWCOUNT > 0
    BEGIN
        INSERT INTO @groups (name, target, free)
        SELECT o.name, x.name, o.free
        FROM @open AS o
        CROSS JOIN @tg AS x
        CROSS APPLY (
            SELECT TOP (1) t.id
            FROM dbo.readpast_tasks AS t WITH (READPAST, READCOMMITTEDLOCK, INDEX(readpast_tasks_ready_grouped_target))
            WHERE t.queue = @queue
              AND t.target = x.name
              AND t.group_name = o.name
              AND t.state = 'pending'
              AND t.chain_wait = 0
              AND t.delayed = 0
        ) AS a;
    END;
END;

IF @n > 0 AND NOT EXISTS (SELECT 1 FROM @groups)
BEGIN
    -- Step 3, no group that may admit has a ready task: the first @n
    -- ungrouped ready tasks of the targets, skipping rows other claimers
    -- hold, are the claim. First, locking nothing, how many of the first @n
    -- of all targets each target has (the first @n of each target's range,
    -- merged in claim order); then that many of each target's range, in
    -- claim order, skipping rows other claimers hold (so another claimer's
    -- rows do not make this one take fewer). READPAST always comes with a
    -- locking read (here UPDLOCK), so it also runs with
    -- READ_COMMITTED_SNAPSHOT ON. The locking read takes rows of several
    -- ranges in one statement, in whatever order the plan reads them; as it
    -- never waits (READPAST) it cannot close a cycle with another writer.
    INSERT INTO @share (name, k)
    SELECT f.name, COUNT(*)
    FROM (
        SELECT TOP (@n) x.name, a.priority, a.available_at, a.id
        FROM @tg AS x
        CROSS APPLY (
            SELECT TOP (@n) t.priority, t.available_at, t.id
            FROM dbo.readpast_tasks AS t WITH (READPAST, READCOMMITTEDLOCK, INDEX(readpast_tasks_ready_target))
            WHERE t.queue = @queue
              AND t.target = x.name
              AND t.state = 'pending'
              AND t.chain_wait = 0
              AND t.delayed = 0
              AND t.group_name IS NULL
            ORDER BY t.priority, t.available_at, t.id
        ) AS a
        ORDER BY a.priority, a.available_at, a.id
    ) AS f
    GROUP BY f.name;

    INSERT INTO @take (id, lease_token)
    SELECT a.id, a.lease_token
    FROM @share AS s
    CROSS APPLY (
        SELECT TOP (s.k) t.id, t.lease_token
        FROM dbo.readpast_tasks AS t WITH (UPDLOCK, READPAST, ROWLOCK, INDEX(readpast_tasks_ready_target))
        WHERE t.queue = @queue
          AND t.target = s.name
          AND t.state = 'pending'
          AND t.chain_wait = 0
          AND t.delayed = 0
          AND t.group_name IS NULL
        ORDER BY t.priority, t.available_at, t.id
    ) AS a;
` + claimTaken + `
END
ELSE IF @n > 0
BEGIN
    -- Step 3, grouped tasks of groups with free slots are ready. The rest of
    -- the plan, from committed rows, locking nothing as above.
    -- The first 2 @n + 16 ungrouped ready tasks of the targets (of each
    -- target's range its first 2 @n + 16, merged), and of each open group and
    -- target its first min(free, @n) tasks and two more (in case other
    -- claimers hold some), merged in claim order.
    INSERT INTO @cand (id, priority, available_at, group_name, free)
    SELECT TOP (@plan_n) a.id, a.priority, a.available_at, NULL, 0
    FROM @tg AS x
    CROSS APPLY (
        SELECT TOP (@plan_n) t.id, t.priority, t.available_at
        FROM dbo.readpast_tasks AS t WITH (READPAST, READCOMMITTEDLOCK, INDEX(readpast_tasks_ready_target))
        WHERE t.queue = @queue
          AND t.target = x.name
          AND t.state = 'pending'
          AND t.chain_wait = 0
          AND t.delayed = 0
          AND t.group_name IS NULL
        ORDER BY t.priority, t.available_at, t.id
    ) AS a
    ORDER BY a.priority, a.available_at, a.id;

    INSERT INTO @cand (id, priority, available_at, group_name, free)
    SELECT a.id, a.priority, a.available_at, o.name, o.free
    FROM @groups AS o
    CROSS APPLY (
        SELECT TOP (CASE WHEN o.free < @n THEN o.free ELSE @n END + 2) t.id, t.priority, t.available_at
        FROM dbo.readpast_tasks AS t WITH (READPAST, READCOMMITTEDLOCK, INDEX(readpast_tasks_ready_grouped_target))
        WHERE t.queue = @queue
          AND t.target = o.target
          AND t.group_name = o.name
          AND t.state = 'pending'
          AND t.chain_wait = 0
          AND t.delayed = 0
        ORDER BY t.priority, t.available_at, t.id
    ) AS a;

    INSERT INTO @plan (seq, id, group_name, free, tried)
    SELECT TOP (@plan_n)
           ROW_NUMBER() OVER (ORDER BY c.priority, c.available_at, c.id),
           c.id, c.group_name, c.free, 0
    FROM @cand AS c
    ORDER BY c.priority, c.available_at, c.id;

    -- Step 4: take tasks in plan order, in up to three rounds. A round first
    -- locks the groups of the next tasks it could take that it does not hold
    -- yet, skipping group rows another transaction holds (READPAST: such a
    -- group is not admitted this time). With the rows locked, the counters
    -- decide: at most max_running - running of a group's tasks, counting the
    -- batch's own. Then it takes the offered tasks still claimable, skipping
    -- rows another claimer holds; a slot offered to a task it could not take
    -- stays free for the group's next task in the next round.
    WHILE @claimed < @n AND @round < 3
    BEGIN
        SET @round = @round + 1;
        SET @want_n = @n - @claimed;

        -- The groups to lock: those of the first @want_n tasks the plan could
        -- take, by the locked counter where held and the committed one
        -- otherwise, that this claim does not hold yet.
        DELETE FROM @need;
        WITH ranked AS (
            SELECT p.seq, p.group_name,
                   ROW_NUMBER() OVER (PARTITION BY p.group_name ORDER BY p.seq) AS group_rank,
                   COALESCE(l.free - l.taken, p.free) AS slots
            FROM @plan AS p
            LEFT JOIN @locked AS l ON l.name = p.group_name
            WHERE p.tried = 0
              AND NOT EXISTS (SELECT 1 FROM @skipped AS s WHERE s.name = p.group_name)
        ), firsts AS (
            SELECT TOP (@want_n) r.seq, r.group_name
            FROM ranked AS r
            WHERE r.group_name IS NULL OR r.group_rank <= r.slots
            ORDER BY r.seq
        )
        INSERT INTO @need (name)
        SELECT DISTINCT f.group_name
        FROM firsts AS f
        WHERE f.group_name IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM @locked AS l WHERE l.name = f.group_name);
        SET @need_n = @@ROWCOUNT;

        IF @need_n > 0
        BEGIN
            INSERT INTO @locked (name, free, taken)
            SELECT g.name, g.max_running - g.running, 0
            FROM dbo.readpast_groups AS g WITH (UPDLOCK, READPAST, ROWLOCK, FORCESEEK)
            WHERE g.name IN (SELECT n.name FROM @need AS n);

            INSERT INTO @skipped (name)
            SELECT n.name
            FROM @need AS n
            WHERE NOT EXISTS (SELECT 1 FROM @locked AS l WHERE l.name = n.name);
        END;

        -- Claim order: a task of a group with free slots that is not locked
        -- yet comes in a later round, and nothing after it is offered now.
        SET @stop = NULL;
        WITH ranked AS (
            SELECT p.seq, p.group_name,
                   ROW_NUMBER() OVER (PARTITION BY p.group_name ORDER BY p.seq) AS group_rank,
                   p.free AS slots
            FROM @plan AS p
            WHERE p.tried = 0
              AND p.group_name IS NOT NULL
              AND NOT EXISTS (SELECT 1 FROM @locked AS l WHERE l.name = p.group_name)
              AND NOT EXISTS (SELECT 1 FROM @skipped AS s WHERE s.name = p.group_name)
        )
        SELECT @stop = MIN(r.seq)
        FROM ranked AS r
        WHERE r.group_rank <= r.slots;

        -- Offer, in plan order, the ungrouped tasks and the tasks of locked
        -- groups within their locked free slots.
        DELETE FROM @take;
        WITH ranked AS (
            SELECT p.seq, p.id, p.group_name,
                   ROW_NUMBER() OVER (PARTITION BY p.group_name ORDER BY p.seq) AS group_rank,
                   l.free - l.taken AS slots
            FROM @plan AS p
            LEFT JOIN @locked AS l ON l.name = p.group_name
            WHERE p.tried = 0
              AND (@stop IS NULL OR p.seq < @stop)
              AND (p.group_name IS NULL OR l.name IS NOT NULL)
        )
        INSERT INTO @take (id)
        SELECT TOP (@want_n) r.id
        FROM ranked AS r
        WHERE r.group_name IS NULL OR r.group_rank <= r.slots
        ORDER BY r.seq;

        IF @@ROWCOUNT = 0
        BEGIN
            IF @need_n = 0
                BREAK;
            CONTINUE;
        END;

        UPDATE p
        SET p.tried = 1
        FROM @plan AS p
        JOIN @take AS k ON k.id = p.id;

        -- Take them: READPAST skips a row another claimer holds right now; the
        -- re-check drops a row claimed and committed by someone else since
        -- the plan was read.
` + claimTaken + `
        UPDATE l
        SET l.taken = x.taken
        FROM @locked AS l
        JOIN (
            SELECT o.group_name, COUNT(*) AS taken
            FROM @out AS o
            WHERE o.group_name IS NOT NULL
            GROUP BY o.group_name
        ) AS x ON x.group_name = l.name;
    END;

    -- Step 5: what each group took joins its running counter; the group rows
    -- are locked since step 4.
    UPDATE g
    SET g.running = g.running + l.taken,
        g.has_free = CASE WHEN g.running + l.taken < g.max_running THEN 1 ELSE 0 END
    FROM dbo.readpast_groups AS g WITH (ROWLOCK, FORCESEEK)
    JOIN @locked AS l ON l.name = g.name
    WHERE l.taken > 0;
END;
`

// claimTaken marks the tasks in @take running, each under a new fencing
// token, into @out, and counts them in @claimed. READPAST skips a row another
// transaction holds; the re-check drops a row that is no longer claimable.
// (On the fast path the rows are this claim's own already, locked by the read
// that chose them, and READPAST passes them; on a server that ignores the
// hints, the re-check is what keeps two claimers from taking one task.)
var claimTaken = `
    UPDATE t
    SET t.state            = 'running',
        t.attempts         = t.attempts + 1,
        t.lease_owner      = @owner,
        t.lease_token      = @token ^ t.id,
        t.lease_expires_at = DATEADD(millisecond, @lease_ms, @now),
        t.started_at       = @now,
        t.session_id       = NULL,
        t.cancel_requested = 0
    OUTPUT ` + columns("inserted") + `
    INTO @out (` + columnList() + `)
    FROM dbo.readpast_tasks AS t WITH (UPDLOCK, READPAST, ROWLOCK, FORCESEEK)
    WHERE t.id IN (SELECT k.id FROM @take AS k)
      AND t.state = 'pending'
      AND t.chain_wait = 0
      AND t.delayed = 0;

    SELECT @claimed = COUNT(*) FROM @out;
`

var claimResult = `
SELECT ` + columns("o") + `
FROM @out AS o
ORDER BY o.priority, o.available_at, o.id;
`

// claimBatch is the whole claim in one round trip.
var claimBatch = query{
	name:   "claim",
	text:   readCommitted + claimPrologue + "BEGIN TRAN;\n" + claimCore + "\nCOMMIT TRAN;\n" + claimResult,
	params: []string{"queue", "owner", "limit", "lease_ms", "token", "targets"},
}
