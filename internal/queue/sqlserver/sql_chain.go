package sqlserver

// Fragments shared by the batches that change chains (enqueue, finish, cancel,
// retry). They run inside the caller's transaction and expect the caller to
// hold the chain rows locked (lock order 2) and to have declared the variables
// they use. The failure message matches queue.ChainCancelledError.

// refreshChain recomputes chain_wait for the chain @chain, whose row this
// transaction holds locked (lock order 2): min_stage is the lowest stage still
// pending or running, and a pending task waits when its stage is above it.
// Every change that can add or end a chain's pending or running tasks runs this
// with the chain row locked, so two finishers of a stage's last two tasks
// serialise and the second sees the first's commit: neither can miss that the
// stage is done. (A claim or a release only moves tasks between pending and
// running, which does not change min_stage.)
//
// The index readpast_tasks_chain (chain, stage, id) INCLUDE (state, chain_wait)
// covers both statements, so the update evaluates its whole predicate on the
// index and locks only the rows whose flag flips; a claimer taking one of the
// chain's runnable tasks at the same moment is never touched. The explicit
// "chain IS NOT NULL" lets the optimizer match that filtered index. Declares
// nothing: the caller declares @min_stage int.
const refreshChain = `
SELECT @min_stage = MIN(x.stage)
FROM dbo.readpast_tasks AS x
WHERE x.chain IS NOT NULL
  AND x.chain = @chain
  AND x.state IN ('pending', 'running');

UPDATE t
SET t.chain_wait = CASE WHEN t.stage > @min_stage THEN 1 ELSE 0 END
FROM dbo.readpast_tasks AS t WITH (ROWLOCK)
WHERE t.chain IS NOT NULL
  AND t.chain = @chain
  AND t.state = 'pending'
  AND t.chain_wait <> CASE WHEN t.stage > @min_stage THEN 1 ELSE 0 END;
`

// refreshChains is refreshChain for every chain named in the table variable
// @chains (column name): enqueue may touch many chains at once.
const refreshChains = `
UPDATE t
SET t.chain_wait = CASE WHEN t.stage > m.min_stage THEN 1 ELSE 0 END
FROM dbo.readpast_tasks AS t WITH (ROWLOCK)
JOIN (
    SELECT x.chain, MIN(x.stage) AS min_stage
    FROM dbo.readpast_tasks AS x
    WHERE x.chain IS NOT NULL
      AND x.chain IN (SELECT c.name FROM @chains AS c)
      AND x.state IN ('pending', 'running')
    GROUP BY x.chain
) AS m ON m.chain = t.chain
WHERE t.chain IS NOT NULL
  AND t.state = 'pending'
  AND t.chain_wait <> CASE WHEN t.stage > m.min_stage THEN 1 ELSE 0 END;
`

// chainFailurePolicy cancels the later stages of a chain whose task @id (at
// stage @stage) just ended @state 'failed' or 'cancelled', unless the chain was
// enqueued with continue_on_failure (@cof). Pending tasks hold no group slot, so
// no group counter changes. Reads @chain, @cof, @state, @stage, @id, @now.
const chainFailurePolicy = `
IF @chain IS NOT NULL AND @cof = 0 AND @state IN ('failed', 'cancelled')
BEGIN
    UPDATE t
    SET t.state           = 'cancelled',
        t.chain_cancelled = 1,
        t.chain_wait      = 0,
        t.finished_at     = @now,
        t.finished_by     = N'chain policy',
        t.last_error      = CONCAT(N'chain ', @chain, N': task ', @id,
                                   N' at stage ', @stage, N' ended ', @state)
    FROM dbo.readpast_tasks AS t WITH (ROWLOCK)
    WHERE t.chain IS NOT NULL
      AND t.chain = @chain
      AND t.state = 'pending'
      AND t.stage > @stage;
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
