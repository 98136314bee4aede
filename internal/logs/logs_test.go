package logs

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/queue/open"
	"readpast/internal/testpg"
)

func TestMain(m *testing.M) { os.Exit(testpg.Main(m)) }

type env struct {
	ctx     context.Context
	dialect string
	dsn     string
	store   queue.LogStore
}

func dialects(t *testing.T, fn func(t *testing.T, e env)) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		fn(t, newEnv(t, "sqlite://"+filepath.Join(t.TempDir(), "l.db")))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		fn(t, newEnv(t, testpg.Shared(t).NewDatabase(t)))
	})
}

func newEnv(t *testing.T, dsn string) env {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	s, err := open.Store(ctx, dsn, queue.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	require.NoError(t, s.Migrate(ctx))
	return env{ctx: ctx, dialect: s.Dialect(), dsn: dsn, store: s.(queue.LogStore)}
}

// insertRows writes n log rows straight into the table (setup data for the
// reads under test): row i belongs to task i%1000, queue q<i%3>, outcome by
// i%5, finished i seconds after base, with msgBytes of messages.
func (e env) insertRows(t *testing.T, n int, base time.Time, msgBytes int) {
	t.Helper()
	outcomes := `CASE x % 5 WHEN 0 THEN 'failed' WHEN 1 THEN 'timed_out' ELSE 'succeeded' END`
	switch e.dialect {
	case "sqlite":
		_, path, _ := queue.ParseDSN(e.dsn)
		db, err := sql.Open("sqlite", path)
		require.NoError(t, err)
		defer db.Close()
		b := base.UnixMicro()
		_, err = db.Exec(fmt.Sprintf(`WITH RECURSIVE s(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM s WHERE x < %d)
			INSERT INTO readpast_attempts (task_id, attempt, queue, node, worker, started_at, finished_at, duration_ms, outcome, messages)
			SELECT x %% 1000, 1, 'q' || (x %% 3), 'n1', 'w1', %d + x * 1000000 - 5000, %d + x * 1000000, 5, %s, printf('%%.*c', %d, 'm')
			FROM s`, n-1, b, b, outcomes, msgBytes))
		require.NoError(t, err)
	case "postgres":
		conn, err := pgx.Connect(e.ctx, e.dsn)
		require.NoError(t, err)
		defer conn.Close(e.ctx)
		_, err = conn.Exec(e.ctx, fmt.Sprintf(`INSERT INTO readpast_attempts
			(task_id, attempt, queue, node, worker, started_at, finished_at, duration_ms, outcome, messages)
			SELECT x %% 1000, 1, 'q' || (x %% 3), 'n1', 'w1', $1::timestamptz + x * interval '1 second' - interval '5 ms',
			       $1::timestamptz + x * interval '1 second', 5, %s, repeat('m', %d)
			FROM generate_series(0, %d) AS x`, outcomes, msgBytes, n-1), base)
		require.NoError(t, err)
	}
}

func TestQueriesFilterAndPage(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, e env) {
		base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		e.insertRows(t, 3000, base, 10)
		count := func(q queue.LogQuery) int {
			total := 0
			q.Limit = 250
			for {
				page, err := e.store.Attempts(e.ctx, q)
				require.NoError(t, err)
				for i, r := range page {
					require.True(t, q.TaskID == 0 || r.TaskID == q.TaskID)
					require.True(t, q.Queue == "" || r.Queue == q.Queue)
					require.True(t, q.Outcome == "" || r.Outcome == q.Outcome)
					require.True(t, q.Since.IsZero() || !r.FinishedAt.Before(q.Since))
					require.True(t, q.Until.IsZero() || r.FinishedAt.Before(q.Until))
					if i > 0 {
						require.Less(t, r.ID, page[i-1].ID, "newest first")
					}
				}
				total += len(page)
				if len(page) < q.Limit {
					return total
				}
				q.Before = page[len(page)-1].ID
			}
		}
		require.Equal(t, 3000, count(queue.LogQuery{}))
		require.Equal(t, 1000, count(queue.LogQuery{Queue: "q1"}))
		require.Equal(t, 600, count(queue.LogQuery{Outcome: queue.OutcomeFailed}))
		require.Equal(t, 3, count(queue.LogQuery{TaskID: 7}))
		require.Equal(t, 100, count(queue.LogQuery{Since: base.Add(100 * time.Second), Until: base.Add(200 * time.Second)}))
		_, err := e.store.Attempts(e.ctx, queue.LogQuery{Outcome: "bogus"})
		require.True(t, queue.IsValidation(err))
	})
}

// heapWatcher discards what it is written and records the peak heap in use.
type heapWatcher struct {
	bytes, peak uint64
	writes      int
}

func (h *heapWatcher) Write(p []byte) (int, error) {
	h.bytes += uint64(len(p))
	if h.writes++; h.writes%16 == 0 {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		h.peak = max(h.peak, m.HeapInuse)
	}
	return len(p), nil
}

func TestExportStreamsInConstantMemory(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, e env) {
		const rows = 100_000
		e.insertRows(t, rows, time.Now().Add(-48*time.Hour), 500)
		for _, f := range []Format{NDJSON, JSON} {
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			w := &heapWatcher{peak: m.HeapInuse}
			n, err := Export(e.ctx, w, e.store, queue.LogQuery{}, f)
			require.NoError(t, err)
			require.Equal(t, int64(rows), n)
			grew := int64(w.peak) - int64(m.HeapInuse)
			t.Logf("%s export of %d rows: %d MiB written, heap grew at most %d MiB", f, n, w.bytes>>20, grew>>20)
			require.Greater(t, w.bytes, uint64(50<<20), "the export is large")
			require.Less(t, grew, int64(24<<20), "memory must not grow with the export")
		}
	})
}

func TestExportFormatsAreValid(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, e env) {
		e.insertRows(t, 2500, time.Now().Add(-time.Hour), 3)
		var buf bytes.Buffer
		_, err := Export(e.ctx, &buf, e.store, queue.LogQuery{Queue: "q2"}, JSON)
		require.NoError(t, err)
		var all []Row
		require.NoError(t, json.Unmarshal(buf.Bytes(), &all))
		require.Len(t, all, 833)
		require.Equal(t, "q2", all[0].Queue)
		buf.Reset()
		_, err = Export(e.ctx, &buf, e.store, queue.LogQuery{Outcome: queue.OutcomeTimedOut}, NDJSON)
		require.NoError(t, err)
		lines := 0
		sc := bufio.NewScanner(&buf)
		for sc.Scan() {
			var r map[string]any
			require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
			require.Equal(t, "timed_out", r["outcome"])
			for _, k := range []string{"task_id", "attempt", "queue", "node", "worker", "session_id", "started_at", "finished_at", "duration_ms", "error", "rows_affected", "messages"} {
				require.Contains(t, r, k)
			}
			lines++
		}
		require.Equal(t, 500, lines)
		_, err = Export(e.ctx, io.Discard, e.store, queue.LogQuery{}, "csv")
		require.True(t, queue.IsValidation(err))
		require.True(t, strings.HasPrefix(string(JSON), "json"))
	})
}

func TestRetentionPurgesInBatches(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, e env) {
		now := time.Now()
		e.insertRows(t, 1200, now.Add(-10*24*time.Hour), 3) // rows finished 10 days ago … 9.99 days ago
		e.insertRows(t, 300, now.Add(-time.Hour), 3)        // recent
		var calls int
		r := &Retention{Store: countingPurge{e.store, &calls}, LogAge: 7 * 24 * time.Hour, Batch: 100, Pause: time.Millisecond}
		n, err := r.PurgeOnce(e.ctx)
		require.NoError(t, err)
		require.Equal(t, int64(1200), n)
		require.GreaterOrEqual(t, calls, 12, "purged in batches of 100")
		left, err := e.store.Attempts(e.ctx, queue.LogQuery{Limit: 1000})
		require.NoError(t, err)
		require.Len(t, left, 300, "recent rows stay")
	})
}

type countingPurge struct {
	queue.LogStore
	calls *int
}

func (c countingPurge) PurgeAttempts(ctx context.Context, cutoff time.Time, batch int) (int64, error) {
	*c.calls++
	return c.LogStore.PurgeAttempts(ctx, cutoff, batch)
}
