package sqlserver

// Fragments shared by the batches that change chains (enqueue, finish, cancel,
// retry). They run inside the caller's transaction and expect the caller to
// hold the chain rows locked (lock order 2) and to have declared what they
// use (chainDeclarations). The failure message matches queue.ChainCancelledError.
//
// Each fragment that changes chain tasks first reads the ids to change through
// readpast_tasks_chain (chain, stage, id) INCLUDE (state, chain_wait), then
// changes them by primary key (FORCESEEK on the clustered index). So it locks
// a task's clustered key before its index keys, in the order a claimer or a
// finisher does; an UPDATE driven by the chain index would take the index key
// first and could close a deadlock cycle with a claimer taking the same row.
// The read takes no lasting lock: the chain row, held, keeps every other
// writer of the chain out, and a claimer only moves tasks from pending to
// running, which changes neither min_stage nor the rows selected.

// chainDeclarations declares what the chain fragments use: the ids of the
// chain tasks to change and their new chain_wait.
const chainDeclarations = `
DECLARE @min_stage int;
DECLARE @chain_rows TABLE (id bigint NOT NULL PRIMARY KEY, queue nvarchar(64) NOT NULL, chain_wait bit NOT NULL);
`

// refreshChain recomputes chain_wait for the chain @chain, whose row this
// transaction holds locked: min_stage is the lowest stage still pending or
// running, and a pending task waits when its stage is above it. Every change
// that can add or end a chain's pending or running tasks runs this with the
// chain row locked, so two finishers of a stage's last two tasks serialise and
// the second sees the first's commit: neither can miss that the stage is
// done. (A claim or a release only moves tasks between pending and running,
// which does not change min_stage.) The explicit "chain IS NOT NULL" lets the
// optimizer match the filtered index.
const refreshChain = `
SELECT @min_stage = MIN(x.stage)
FROM dbo.readpast_tasks AS x
WHERE x.chain IS NOT NULL
  AND x.chain = @chain
  AND x.state IN ('pending', 'running');

DELETE FROM @chain_rows;
INSERT INTO @chain_rows (id, queue, chain_wait)
SELECT x.id, x.queue, CASE WHEN x.stage > @min_stage THEN 1 ELSE 0 END
FROM dbo.readpast_tasks AS x
WHERE x.chain IS NOT NULL
  AND x.chain = @chain
  AND x.state = 'pending'
  AND x.chain_wait <> CASE WHEN x.stage > @min_stage THEN 1 ELSE 0 END;
` + flipChainWait

// refreshChains is refreshChain for every chain named in the table variable
// @chains (column name): enqueue may touch many chains at once.
const refreshChains = `
DELETE FROM @chain_rows;
INSERT INTO @chain_rows (id, queue, chain_wait)
SELECT x.id, x.queue, CASE WHEN x.stage > m.min_stage THEN 1 ELSE 0 END
FROM dbo.readpast_tasks AS x
JOIN (
    SELECT y.chain, MIN(y.stage) AS min_stage
    FROM dbo.readpast_tasks AS y
    WHERE y.chain IS NOT NULL
      AND y.chain IN (SELECT c.name FROM @chains AS c)
      AND y.state IN ('pending', 'running')
    GROUP BY y.chain
) AS m ON m.chain = x.chain
WHERE x.chain IS NOT NULL
  AND x.state = 'pending'
  AND x.chain_wait <> CASE WHEN x.stage > m.min_stage THEN 1 ELSE 0 END;
` + flipChainWait

// flipChainWait sets chain_wait of the rows in @chain_rows, by primary key.
const flipChainWait = `
UPDATE t
SET t.chain_wait = r.chain_wait
FROM dbo.readpast_tasks AS t WITH (ROWLOCK, FORCESEEK)
JOIN @chain_rows AS r ON r.id = t.id
WHERE t.state = 'pending';
`

// chainFailurePolicy cancels the later stages of a chain whose task @id (at
// stage @stage) just ended @state 'failed' or 'cancelled', unless the chain was
// enqueued with continue_on_failure (@cof), and counts them in @counted.
// Pending tasks hold no group slot, so no group counter changes. Reads @chain,
// @cof, @state, @stage, @id, @now.
const chainFailurePolicy = `
IF @chain IS NOT NULL AND @cof = 0 AND @state IN ('failed', 'cancelled')
BEGIN
    DELETE FROM @chain_rows;
    INSERT INTO @chain_rows (id, queue, chain_wait)
    SELECT x.id, x.queue, 0
    FROM dbo.readpast_tasks AS x
    WHERE x.chain IS NOT NULL
      AND x.chain = @chain
      AND x.state = 'pending'
      AND x.stage > @stage;

    UPDATE t
    SET t.state           = 'cancelled',
        t.chain_cancelled = 1,
        t.chain_wait      = 0,
        t.delayed         = 0,
        t.finished_at     = @now,
        t.finished_by     = N'chain policy',
        t.last_error      = CONCAT(N'chain ', @chain, N': task ', @id,
                                   N' at stage ', @stage, N' ended ', @state)
    FROM dbo.readpast_tasks AS t WITH (ROWLOCK, FORCESEEK)
    JOIN @chain_rows AS r ON r.id = t.id
    WHERE t.state = 'pending';

    INSERT INTO @counted (queue, state, n)
    SELECT r.queue, 'cancelled', COUNT_BIG(*)
    FROM @chain_rows AS r
    GROUP BY r.queue;
END;
`

// lockChain locks the chain row of task @id, if it has a chain (lock order 2).
// A task's chain never changes after enqueue, so the first read needs no lock:
// it only says which row to lock. UPDLOCK (not a plain read) because whoever
// holds the chain row is about to change the chain. Sets @chain and @cof.
const lockChain = `
SELECT @chain = t.chain
FROM dbo.readpast_tasks AS t
WHERE t.id = @id;

IF @chain IS NOT NULL
BEGIN
    SELECT @cof = c.continue_on_failure
    FROM dbo.readpast_chains AS c WITH (UPDLOCK, ROWLOCK)
    WHERE c.name = @chain;
END;
`
