package sqlserver

// The rollups (docs/QUEUE.md, "Counts and the throughput series"): finished
// counts per queue and state (readpast_counts) and attempts per minute and
// hour (readpast_throughput), changed in the transaction of every change into
// or out of a final state, so they are exact. These fragments run last before
// the log insert (lock order: queue, chains, tasks, groups, rollup rows,
// inserts), so a transaction holds a rollup row only for the rest of its
// commit.
//
// Each is an upsert of the safe form for SQL Server: the UPDATE reads the key
// WITH (UPDLOCK, SERIALIZABLE), so when the row is missing the key range is
// locked and a second transaction upserting the same key waits and then finds
// the row the first inserted, instead of both inserting (a primary key
// violation) or one losing its increment. Only these rollup tables take range
// locks, and only finishers, cancels, retries and purges touch them: never a
// claimer. MERGE is avoided (its history of bugs; see sql_enqueue.go).
//
// # Stripes
//
// "For the rest of its commit" is still the log insert and the commit's log
// flush, and SQL Server ends each attempt in a transaction of its own: with
// one row per key, every finish of a queue waited for the one before it to
// commit, a ceiling of about one finish per log flush for a queue however
// many workers it has. So each key has up to 16 rows, its stripes (migration
// 000009): a change adds to one stripe, and every reader sums a key's stripes
// (queuesQuery, throughputQuery, deleteQueueBatch), which stays bounded: at
// most 16 rows a key. A finish takes the stripe of its task id
// (taskStripe): consecutive tasks, which a queue's workers claim and finish
// side by side, take different rows, and a transaction of one attempt holds
// one stripe. A batch of many tasks (cancel, retry, purge, bulk) takes its
// session's (sessionStripe): @@SPID, "the session ID of the current user
// process" (Microsoft: "@@SPID"), differs between the sessions running at
// once. A stripe may go below zero (a purge subtracts from its own stripe);
// only the sum means anything. The stripe count lives only here: readers sum
// whatever stripes exist, so changing it needs no migration.

// taskStripe is the stripe of task @id: one of 16, the stripe count (and
// sessionStripe's).
const taskStripe = `CAST(@id % 16 AS smallint)`

// sessionStripe is the stripe of the session running the batch.
const sessionStripe = `CAST(@@SPID % 16 AS smallint)`

// rollupDeclarations declares @counted: the finished-count deltas the batch
// collects, applied by countRollup to stripe @stripe (the session's; a
// finish sets its task's).
const rollupDeclarations = `
DECLARE @counted TABLE (queue nvarchar(64) NOT NULL, state varchar(10) NOT NULL, n bigint NOT NULL);
DECLARE @stripe smallint = ` + sessionStripe + `;
`

// countRollup adds @counted to stripe @stripe of readpast_counts, one row per
// (queue, state), in key order.
const countRollup = `
UPDATE c
SET c.n = c.n + x.n
FROM dbo.readpast_counts AS c WITH (UPDLOCK, SERIALIZABLE, FORCESEEK)
JOIN (
    SELECT k.queue, k.state, SUM(k.n) AS n
    FROM @counted AS k
    GROUP BY k.queue, k.state
    HAVING SUM(k.n) <> 0
) AS x ON x.queue = c.queue AND x.state = c.state AND c.stripe = @stripe;

INSERT INTO dbo.readpast_counts (queue, state, stripe, n)
SELECT x.queue, x.state, @stripe, x.n
FROM (
    SELECT k.queue, k.state, SUM(k.n) AS n
    FROM @counted AS k
    GROUP BY k.queue, k.state
    HAVING SUM(k.n) <> 0
) AS x
WHERE NOT EXISTS (
    SELECT 1
    FROM dbo.readpast_counts AS c WITH (UPDLOCK, SERIALIZABLE, FORCESEEK)
    WHERE c.queue = x.queue AND c.state = x.state AND c.stripe = @stripe);
`

// throughputRollup adds one attempt of queue @queue with outcome @outcome,
// which finished at @fin_at after @busy_ms of work, to stripe @stripe of the
// minute and hour buckets of readpast_throughput.
const throughputRollup = `
UPDATE r
SET r.n = r.n + 1, r.busy_ms = r.busy_ms + @busy_ms
FROM dbo.readpast_throughput AS r WITH (UPDLOCK, SERIALIZABLE, FORCESEEK)
JOIN (VALUES ('minute', DATEADD(minute, DATEDIFF(minute, 0, @fin_at), 0)),
             ('hour',   DATEADD(hour, DATEDIFF(hour, 0, @fin_at), 0))) AS b(span, bucket)
  ON r.span = b.span AND r.bucket = b.bucket
WHERE r.queue = @queue
  AND r.outcome = @outcome
  AND r.stripe = @stripe;

INSERT INTO dbo.readpast_throughput (span, bucket, queue, outcome, stripe, n, busy_ms)
SELECT b.span, b.bucket, @queue, @outcome, @stripe, 1, @busy_ms
FROM (VALUES ('minute', DATEADD(minute, DATEDIFF(minute, 0, @fin_at), 0)),
             ('hour',   DATEADD(hour, DATEDIFF(hour, 0, @fin_at), 0))) AS b(span, bucket)
WHERE NOT EXISTS (
    SELECT 1
    FROM dbo.readpast_throughput AS r WITH (UPDLOCK, SERIALIZABLE, FORCESEEK)
    WHERE r.span = b.span AND r.bucket = b.bucket AND r.queue = @queue AND r.outcome = @outcome
      AND r.stripe = @stripe);
`

// throughputBuckets runs before a finish's transaction, on its own
// (autocommitted): it creates, empty, the minute and hour rows of its task's
// stripe that the finish will add to, if they are missing. Inside the
// transaction throughputRollup then finds its rows, and its
// (UPDLOCK, SERIALIZABLE) locks only those keys: on a missing key it would
// range-lock the gap up to the next key in the index (Microsoft: "Transaction
// locking and row versioning guide", key-range locks), which at the start of
// a minute is another queue's row or another stripe's, and hold it through
// the commit. The insert here takes no range lock (a plain insert at READ
// COMMITTED locks its own new key), and two finishers racing to create one
// row make one of them fail on the key (2601/2627), which is caught: the row
// exists either way. Should the row still be missing inside the transaction
// (the minute turned, the bucket was purged), throughputRollup inserts it as
// before. The read of the task's queue is the only other read: its row is
// held by this finisher's lease. The counts rows are not made here: a
// (queue, state, stripe) row is made once in the queue's life and never
// deleted, so its range lock is a queue's first few finishes' only, while a
// new bucket comes every minute.
const throughputBuckets = `
BEGIN TRY
    INSERT INTO dbo.readpast_throughput (span, bucket, queue, outcome, stripe, n, busy_ms)
    SELECT b.span, b.bucket, t.queue, @outcome, ` + taskStripe + `, 0, 0
    FROM dbo.readpast_tasks AS t
    CROSS JOIN (VALUES ('minute', DATEADD(minute, DATEDIFF(minute, 0, COALESCE(@finished, SYSUTCDATETIME())), 0)),
                       ('hour',   DATEADD(hour, DATEDIFF(hour, 0, COALESCE(@finished, SYSUTCDATETIME())), 0))) AS b(span, bucket)
    WHERE t.id = @id
      AND t.lease_token = @token
      AND NOT EXISTS (
          SELECT 1
          FROM dbo.readpast_throughput AS r
          WHERE r.span = b.span AND r.bucket = b.bucket AND r.queue = t.queue AND r.outcome = @outcome
            AND r.stripe = ` + taskStripe + `);
END TRY
BEGIN CATCH
    IF ERROR_NUMBER() NOT IN (2601, 2627) THROW;
END CATCH;
`
