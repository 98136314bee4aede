package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"readpast/internal/dialect"
	"readpast/internal/queue"
)

// historyChunk is how many finished tasks one statement of the build writes:
// small enough that no transaction of it holds the server for long.
const historyChunk = 200_000

// historyDays is how far back the built history reaches: a month of
// retention, the newest of it inside the throughput rollups' windows.
const historyDays = 30

// historyShape says where built history goes: queues prefix0, 1 and 2, and
// finishes spread over the historyDays days that ended endDaysAgo days ago.
type historyShape struct {
	prefix     string
	endDaysAgo int
}

// buildHistory adds n finished tasks to the queues of h, each with its
// execution-log row, in bulk SQL on the target (the store's own database): a
// million real finish transactions would take longer than the measurement and
// leave the same rows. In the same statements it adds to what the store keeps
// beside the tasks, as finishes would have: the finished counts
// (readpast_counts) and the throughput rollups of the attempts inside their
// windows. Tasks are spread over the queues, one in a hundred failed, and
// finish over historyDays days in id order; the third queue's are of one
// group and one schedule (historyGroup, historySchedule).
func buildHistory(ctx context.Context, c Config, h historyShape, n int) error {
	tmpl, ok := historySQL[c.Dialect]
	if !ok {
		return fmt.Errorf("building history: no bulk SQL for dialect %q", c.Dialect)
	}
	// The queues exist, as enqueues would have made them, and stay paused:
	// they hold finished tasks only (the history part's also its live set).
	for i := range historyQueues {
		if err := pauseQueue(ctx, c.Store, fmt.Sprint(h.prefix, i), true); err != nil {
			return err
		}
	}
	start := time.Now()
	for done := 0; done < n; {
		k := min(historyChunk, n-done)
		newest, err := c.Store.List(ctx, queue.ListParams{Limit: 1})
		if err != nil {
			return err
		}
		after := int64(0)
		if len(newest) > 0 {
			after = newest[0].ID
		}
		r := strings.NewReplacer("{n}", fmt.Sprint(k), "{after}", fmt.Sprint(after), "{days}", fmt.Sprint(historyDays),
			"{end}", fmt.Sprint(h.endDaysAgo), "{queues}", fmt.Sprint(len(historyQueues)), "{prefix}", h.prefix)
		if _, err := c.Target.Run(ctx, r.Replace(tmpl), nil); err != nil {
			return fmt.Errorf("building history: %w", err)
		}
		done += k
		fmt.Fprintf(c.Progress, "history: %d of %d finished tasks written (%.0f s)\n", done, n, time.Since(start).Seconds())
	}
	return settle(ctx, c)
}

// settle brings the planner's statistics up to date after a bulk load, as
// autovacuum does on PostgreSQL within a minute of it (and writes the load's
// pages out, a checkpoint, so that no measurement waits behind that) and
// auto-update statistics on SQL Server: the measurement is of a steady state,
// not of the minute after a million rows arrived at once. SQLite keeps no
// statistics unless told to (the store never runs ANALYZE), so it plans as it
// would in production.
func settle(ctx context.Context, c Config) error {
	switch c.Dialect {
	case dialect.SQLServer:
		_, err := c.Target.Run(ctx, "UPDATE STATISTICS dbo.readpast_tasks; UPDATE STATISTICS dbo.readpast_attempts;", nil)
		return err
	case dialect.SQLite:
		return nil
	}
	conn, err := pgx.Connect(ctx, c.DSN)
	if err != nil {
		return fmt.Errorf("vacuuming after the history was built: %w", err)
	}
	defer conn.Close(ctx)
	for _, t := range []string{"readpast_tasks", "readpast_attempts", "readpast_counts", "readpast_throughput"} {
		if _, err := conn.Exec(ctx, "VACUUM ANALYZE "+t); err != nil {
			return fmt.Errorf("vacuuming %s after the history was built: %w", t, err)
		}
	}
	if _, err := conn.Exec(ctx, "CHECKPOINT"); err != nil {
		fmt.Fprintf(c.Progress, "history: no checkpoint after the build (%v); measuring anyway\n", err)
	}
	return nil
}

// historySQL writes {n} finished tasks with ids after {after}, into queues
// {prefix}0 … {prefix}{queues-1}, finishing over the {days} days that ended
// {end} days ago, with their log rows, counts and rollups.
var historySQL = map[dialect.Dialect]string{
	dialect.Postgres: `
INSERT INTO readpast_tasks (queue, body, available_at, state, attempts, created_at, started_at, finished_at, last_error,
                            group_name, schedule_name)
SELECT '{prefix}' || (g % {queues}), 'SELECT 1 -- history', f - interval '2 seconds',
       CASE WHEN g % 100 = 0 THEN 'failed' ELSE 'succeeded' END, 1,
       f - interval '2 seconds', f - interval '1 second', f,
       CASE WHEN g % 100 = 0 THEN 'bench: failed on purpose' END,
       CASE WHEN g % {queues} = 2 THEN '{prefix}group' END, CASE WHEN g % {queues} = 2 THEN '{prefix}schedule' END
  FROM generate_series(1, {n}) g
 CROSS JOIN LATERAL (SELECT now() - interval '{end} days' - interval '{days} days' * (1 - g::float8 / {n}) AS f) t;
INSERT INTO readpast_attempts (task_id, attempt, queue, node, worker, started_at, finished_at, duration_ms, outcome, error)
SELECT id, 1, queue, 'bench', 'bench-w1', started_at, finished_at, 1000, state, coalesce(last_error, '')
  FROM readpast_tasks WHERE id > {after};
INSERT INTO readpast_counts AS c (queue, state, n)
SELECT queue, state, count(*) FROM readpast_tasks WHERE id > {after} GROUP BY queue, state
ON CONFLICT (queue, state) DO UPDATE SET n = c.n + excluded.n;
INSERT INTO readpast_throughput AS tp (span, bucket, queue, outcome, n, busy_ms)
SELECT sp.span, date_trunc(sp.span, a.finished_at), a.queue, a.outcome, count(*), sum(a.duration_ms)
  FROM readpast_attempts a
 CROSS JOIN (VALUES ('minute', interval '48 hours'), ('hour', interval '8 days')) AS sp(span, keep)
 WHERE a.task_id > {after} AND a.finished_at >= now() - sp.keep
 GROUP BY 1, 2, 3, 4
ON CONFLICT (span, bucket, queue, outcome) DO UPDATE SET n = tp.n + excluded.n, busy_ms = tp.busy_ms + excluded.busy_ms;`,

	dialect.SQLite: `
INSERT INTO readpast_tasks (queue, body, available_at, state, attempts, created_at, started_at, finished_at, last_error,
                            group_name, schedule_name)
WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < {n}),
     t(g, f) AS (SELECT g, CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER)
                           - CAST(({end} + {days} * (1 - CAST(g AS REAL) / {n})) * 86400000000.0 AS INTEGER) FROM s)
SELECT '{prefix}' || (g % {queues}), 'SELECT 1 -- history', f - 2000000,
       CASE WHEN g % 100 = 0 THEN 'failed' ELSE 'succeeded' END, 1,
       f - 2000000, f - 1000000, f,
       CASE WHEN g % 100 = 0 THEN 'bench: failed on purpose' END,
       CASE WHEN g % {queues} = 2 THEN '{prefix}group' END, CASE WHEN g % {queues} = 2 THEN '{prefix}schedule' END
  FROM t;
INSERT INTO readpast_attempts (task_id, attempt, queue, node, worker, started_at, finished_at, duration_ms, outcome, error)
SELECT id, 1, queue, 'bench', 'bench-w1', started_at, finished_at, 1000, state, coalesce(last_error, '')
  FROM readpast_tasks WHERE id > {after};
INSERT INTO readpast_counts (queue, state, n)
SELECT queue, state, count(*) FROM readpast_tasks WHERE id > {after} GROUP BY queue, state
ON CONFLICT (queue, state) DO UPDATE SET n = n + excluded.n;
INSERT INTO readpast_throughput (span, bucket, queue, outcome, n, busy_ms)
SELECT s.span, a.finished_at - a.finished_at % s.width, a.queue, a.outcome, count(*), sum(a.duration_ms)
  FROM readpast_attempts a
  JOIN (SELECT 'minute' AS span, 60000000 AS width, 172800000000 AS keep
        UNION ALL SELECT 'hour', 3600000000, 691200000000) s
    ON a.finished_at >= CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER) - s.keep
 WHERE a.task_id > {after}
 GROUP BY 1, 2, 3, 4
ON CONFLICT (span, bucket, queue, outcome) DO UPDATE SET n = n + excluded.n, busy_ms = busy_ms + excluded.busy_ms;`,

	// Not run here (no SQL Server); the same design in T-SQL.
	dialect.SQLServer: `
WITH s AS (SELECT TOP ({n}) ROW_NUMBER() OVER (ORDER BY (SELECT NULL)) AS g
             FROM sys.all_columns a CROSS JOIN sys.all_columns b),
     t AS (SELECT g, DATEADD(second, -CAST(({end} + {days} * (1 - CAST(g AS float) / {n})) * 86400.0 AS int), SYSUTCDATETIME()) AS f FROM s)
INSERT INTO dbo.readpast_tasks (queue, body, available_at, state, attempts, created_at, started_at, finished_at, last_error,
                                group_name, schedule_name)
SELECT CONCAT(N'{prefix}', g % {queues}), N'SELECT 1 -- history', DATEADD(second, -2, f),
       CASE WHEN g % 100 = 0 THEN 'failed' ELSE 'succeeded' END, 1,
       DATEADD(second, -2, f), DATEADD(second, -1, f), f,
       CASE WHEN g % 100 = 0 THEN N'bench: failed on purpose' END,
       CASE WHEN g % {queues} = 2 THEN N'{prefix}group' END, CASE WHEN g % {queues} = 2 THEN N'{prefix}schedule' END
  FROM t;
INSERT INTO dbo.readpast_attempts (task_id, attempt, queue, node, worker, started_at, finished_at, duration_ms, outcome, error)
SELECT id, 1, queue, N'bench', N'bench-w1', started_at, finished_at, 1000, state, COALESCE(last_error, N'')
  FROM dbo.readpast_tasks WHERE id > {after};
MERGE dbo.readpast_counts AS c
USING (SELECT queue, state, COUNT_BIG(*) AS n FROM dbo.readpast_tasks WHERE id > {after} GROUP BY queue, state) AS x
   ON c.queue = x.queue AND c.state = x.state AND c.stripe = 0
 WHEN MATCHED THEN UPDATE SET n = c.n + x.n
 WHEN NOT MATCHED THEN INSERT (queue, state, n) VALUES (x.queue, x.state, x.n);
MERGE dbo.readpast_throughput AS tp
USING (SELECT s.span, CASE s.span WHEN 'minute' THEN DATEADD(minute, DATEDIFF(minute, 0, a.finished_at), 0)
                                  ELSE DATEADD(hour, DATEDIFF(hour, 0, a.finished_at), 0) END AS bucket,
              a.queue, a.outcome, COUNT_BIG(*) AS n, SUM(a.duration_ms) AS busy_ms
         FROM dbo.readpast_attempts AS a
        CROSS JOIN (VALUES ('minute', 2), ('hour', 8)) AS s(span, days)
        WHERE a.task_id > {after} AND a.finished_at >= DATEADD(day, -s.days, SYSUTCDATETIME())
        GROUP BY s.span, CASE s.span WHEN 'minute' THEN DATEADD(minute, DATEDIFF(minute, 0, a.finished_at), 0)
                                     ELSE DATEADD(hour, DATEDIFF(hour, 0, a.finished_at), 0) END, a.queue, a.outcome) AS x
   ON tp.span = x.span AND tp.bucket = x.bucket AND tp.queue = x.queue AND tp.outcome = x.outcome AND tp.stripe = 0
 WHEN MATCHED THEN UPDATE SET n = tp.n + x.n, busy_ms = tp.busy_ms + x.busy_ms
 WHEN NOT MATCHED THEN INSERT (span, bucket, queue, outcome, n, busy_ms) VALUES (x.span, x.bucket, x.queue, x.outcome, x.n, x.busy_ms);`,
}
