package sqlserver

import (
	"context"
	"database/sql"
	"time"

	"readpast/internal/queue"
)

// throughputQuery reads the buckets of one span from @since's bucket on, each
// (bucket, queue, outcome) the sum of its stripes (sql_rollups.go,
// "Stripes"): at most 16 rows a point, read in primary key order, so the
// aggregate streams.
var throughputQuery = query{
	name: "throughput",
	text: readCommitted + `SET NOCOUNT ON;
SELECT r.bucket, r.queue, r.outcome, SUM(r.n), SUM(r.busy_ms)
FROM dbo.readpast_throughput AS r
WHERE r.span = @span
  AND r.bucket >= CASE @span WHEN 'minute' THEN DATEADD(minute, DATEDIFF(minute, 0, @since), 0)
                             ELSE DATEADD(hour, DATEDIFF(hour, 0, @since), 0) END
GROUP BY r.bucket, r.queue, r.outcome
ORDER BY r.bucket, r.queue, r.outcome;
`,
	params: []string{"span", "since"},
}

// purgeRollupsBatch deletes the buckets past their span's keep, at most
// purgeRollupsChunk rows a statement, each statement its own transaction:
// SQL Server tries to escalate a statement's row locks to a table lock at
// about 5,000 locks (Microsoft: "Lock escalation"), which would stop every
// finish of every queue until the purge commits. Each DELETE seeks the
// primary key (span, bucket, ...) from the start of one span.
var purgeRollupsBatch = query{
	name: "purge-rollups",
	text: readCommitted + `SET NOCOUNT ON;
DECLARE @total bigint = 0;
DECLARE @n int = 1;
WHILE @n > 0
BEGIN
    DELETE TOP (2000) FROM dbo.readpast_throughput WITH (ROWLOCK)
    WHERE span = 'minute' AND bucket < @minutes;
    SET @n = @@ROWCOUNT;
    SET @total += @n;
END;
SET @n = 1;
WHILE @n > 0
BEGIN
    DELETE TOP (2000) FROM dbo.readpast_throughput WITH (ROWLOCK)
    WHERE span = 'hour' AND bucket < @hours;
    SET @n = @@ROWCOUNT;
    SET @total += @n;
END;
SELECT @total;
`,
	params: []string{"minutes", "hours"},
}

// Throughput implements queue.Store: the buckets of readpast_throughput.
func (s *Store) Throughput(ctx context.Context, q queue.ThroughputQuery) ([]queue.ThroughputPoint, error) {
	args := []any{sql.Named("span", varchar(string(q.Span))), sql.Named("since", datetime2(q.Since))}
	points, err := queryAll(ctx, s.db, throughputQuery.text, args, func(r *sql.Rows) (queue.ThroughputPoint, error) {
		var (
			p       queue.ThroughputPoint
			outcome string
			busy    int64
		)
		err := r.Scan(&p.At, &p.Queue, &outcome, &p.N, &busy)
		p.At, p.Outcome, p.Busy = p.At.UTC(), queue.Outcome(outcome), time.Duration(busy)*time.Millisecond
		return p, err
	})
	return points, wrap("reading the throughput rollup", err)
}

// PurgeRollups implements queue.Store.
func (s *Store) PurgeRollups(ctx context.Context, now time.Time) (int64, error) {
	var n int64
	err := retryDeadlock(ctx, func() error {
		return s.write(ctx, func(ctx context.Context, c *sql.Conn) error {
			return c.QueryRowContext(ctx, purgeRollupsBatch.text,
				sql.Named("minutes", datetime2(now.Add(-queue.RollupMinutesKept))),
				sql.Named("hours", datetime2(now.Add(-queue.RollupHoursKept)))).Scan(&n)
		})
	})
	return n, wrap("purging the throughput rollup", err)
}
