-- Costs that do not grow with history (docs/QUEUE.md, "Counts and the
-- throughput series"): finished counts per queue and state, and attempts per
-- minute and hour, kept by the transactions that change them. Times are
-- integer Unix microseconds, as everywhere in this schema.
CREATE TABLE readpast_counts (
    queue TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('succeeded', 'failed', 'cancelled')),
    n     INTEGER NOT NULL,
    PRIMARY KEY (queue, state)
);
INSERT INTO readpast_counts (queue, state, n)
SELECT queue, state, count(*) FROM readpast_tasks
 WHERE state IN ('succeeded', 'failed', 'cancelled') GROUP BY queue, state;

CREATE TABLE readpast_throughput (
    span    TEXT NOT NULL CHECK (span IN ('minute', 'hour')),
    bucket  INTEGER NOT NULL,
    queue   TEXT NOT NULL,
    outcome TEXT NOT NULL,
    n       INTEGER NOT NULL,
    busy_ms INTEGER NOT NULL,
    PRIMARY KEY (span, bucket, queue, outcome)
);
INSERT INTO readpast_throughput (span, bucket, queue, outcome, n, busy_ms)
SELECT s.span, a.finished_at - a.finished_at % s.width, a.queue, a.outcome, count(*), sum(a.duration_ms)
  FROM readpast_attempts a
  JOIN (SELECT 'minute' AS span, 60000000 AS width, 172800000000 AS keep
        UNION ALL SELECT 'hour', 3600000000, 691200000000) s
    ON a.finished_at >= CAST(unixepoch('subsec') * 1000000 AS INTEGER) - s.keep
 GROUP BY 1, 2, 3, 4;
