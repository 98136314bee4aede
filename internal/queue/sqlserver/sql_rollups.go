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

// rollupDeclarations declares @counted: the finished-count deltas the batch
// collects, applied by countRollup.
const rollupDeclarations = `
DECLARE @counted TABLE (queue nvarchar(64) NOT NULL, state varchar(10) NOT NULL, n bigint NOT NULL);
`

// countRollup adds @counted to readpast_counts, one row per (queue, state), in
// key order.
const countRollup = `
UPDATE c
SET c.n = c.n + x.n
FROM dbo.readpast_counts AS c WITH (UPDLOCK, SERIALIZABLE, FORCESEEK)
JOIN (
    SELECT k.queue, k.state, SUM(k.n) AS n
    FROM @counted AS k
    GROUP BY k.queue, k.state
    HAVING SUM(k.n) <> 0
) AS x ON x.queue = c.queue AND x.state = c.state;

INSERT INTO dbo.readpast_counts (queue, state, n)
SELECT x.queue, x.state, x.n
FROM (
    SELECT k.queue, k.state, SUM(k.n) AS n
    FROM @counted AS k
    GROUP BY k.queue, k.state
    HAVING SUM(k.n) <> 0
) AS x
WHERE NOT EXISTS (
    SELECT 1
    FROM dbo.readpast_counts AS c WITH (UPDLOCK, SERIALIZABLE, FORCESEEK)
    WHERE c.queue = x.queue AND c.state = x.state);
`

// throughputRollup adds one attempt of queue @queue with outcome @outcome,
// which finished at @fin_at after @busy_ms of work, to the minute and hour
// buckets of readpast_throughput.
const throughputRollup = `
UPDATE r
SET r.n = r.n + 1, r.busy_ms = r.busy_ms + @busy_ms
FROM dbo.readpast_throughput AS r WITH (UPDLOCK, SERIALIZABLE, FORCESEEK)
JOIN (VALUES ('minute', DATEADD(minute, DATEDIFF(minute, 0, @fin_at), 0)),
             ('hour',   DATEADD(hour, DATEDIFF(hour, 0, @fin_at), 0))) AS b(span, bucket)
  ON r.span = b.span AND r.bucket = b.bucket
WHERE r.queue = @queue
  AND r.outcome = @outcome;

INSERT INTO dbo.readpast_throughput (span, bucket, queue, outcome, n, busy_ms)
SELECT b.span, b.bucket, @queue, @outcome, 1, @busy_ms
FROM (VALUES ('minute', DATEADD(minute, DATEDIFF(minute, 0, @fin_at), 0)),
             ('hour',   DATEADD(hour, DATEDIFF(hour, 0, @fin_at), 0))) AS b(span, bucket)
WHERE NOT EXISTS (
    SELECT 1
    FROM dbo.readpast_throughput AS r WITH (UPDLOCK, SERIALIZABLE, FORCESEEK)
    WHERE r.span = b.span AND r.bucket = b.bucket AND r.queue = @queue AND r.outcome = @outcome);
`
