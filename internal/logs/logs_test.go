package logs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// The tests here take t.Context(), not the Env's: they are bounded by their
// work (a fixed number of rows), and under -race on a loaded machine writing
// and exporting 30,000 rows outlasted the Env context's five minutes.

// writeAttempts gives n new tasks one finished attempt each, through the store:
// task i is in queue q<i%3>, its attempt finished i seconds after base with
// outcome by i%5 (failed, timed_out, then three succeeded) and msgBytes of
// messages.
func writeAttempts(t *testing.T, e *testenv.Env, n int, base time.Time, msgBytes int) {
	t.Helper()
	msg := strings.Repeat("m", msgBytes)
	for done := 0; done < n; {
		size := min(1000, n-done)
		batch := make([]queue.NewTask, size)
		for i := range batch {
			batch[i] = queue.NewTask{Queue: fmt.Sprintf("q%d", (done+i)%3), Body: "SELECT 1", MaxAttempts: 1}
		}
		_, err := e.Store.Enqueue(t.Context(), batch)
		require.NoError(t, err)
		var attempts []queue.Attempt
		for q := 0; q < 3; q++ {
			got, err := e.Store.Claim(t.Context(), queue.ClaimParams{Queue: fmt.Sprintf("q%d", q), Owner: "n1/w1", Limit: 1000, LeaseDuration: time.Hour})
			require.NoError(t, err)
			for _, task := range got {
				i := done + len(attempts)
				fin := base.Add(time.Duration(i) * time.Second)
				o := queue.OutcomeSucceeded
				switch i % 5 {
				case 0:
					o = queue.OutcomeFailed
				case 1:
					o = queue.OutcomeTimedOut
				}
				attempts = append(attempts, queue.Attempt{Lease: task.Lease(), Outcome: o, Node: "n1", Worker: "w1",
					StartedAt: fin.Add(-5 * time.Millisecond), FinishedAt: fin, Messages: msg})
			}
		}
		require.Len(t, attempts, size)
		res, err := e.Store.Finish(t.Context(), attempts)
		require.NoError(t, err)
		for _, r := range res {
			require.NoError(t, r.Err)
		}
		done += size
	}
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
	testenv.ForEachDialect(t, func(t *testing.T, e *testenv.Env) {
		// 60 MB of log: 30,000 rows of 2 kB, or on Babelfish, whose finishes
		// are slow, a third of the rows three times as large. (The heap an
		// export holds is a page of rows: it grows with the size of a row.)
		rows, size := 30_000, 2_000
		if e.Dialect == testenv.SQLServer && testenv.IsBabelfish(t, e.DSN) {
			rows, size = 10_000, 6_000
		}
		writeAttempts(t, e, rows, time.Now().Add(-48*time.Hour), size)
		for _, f := range []Format{NDJSON, JSON} {
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			w := &heapWatcher{peak: m.HeapInuse}
			n, err := Export(t.Context(), w, e.Store, queue.LogQuery{}, f)
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
	testenv.ForEachDialect(t, func(t *testing.T, e *testenv.Env) {
		writeAttempts(t, e, 2500, time.Now().Add(-time.Hour), 3)
		var buf bytes.Buffer
		_, err := Export(t.Context(), &buf, e.Store, queue.LogQuery{Queue: "q2"}, JSON)
		require.NoError(t, err)
		var all []Row
		require.NoError(t, json.Unmarshal(buf.Bytes(), &all))
		require.Len(t, all, 833)
		require.Equal(t, "q2", all[0].Queue)
		buf.Reset()
		_, err = Export(t.Context(), &buf, e.Store, queue.LogQuery{Outcome: queue.OutcomeTimedOut}, NDJSON)
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
		_, err = Export(t.Context(), io.Discard, e.Store, queue.LogQuery{}, "csv")
		require.True(t, queue.IsValidation(err))
		require.True(t, strings.HasPrefix(string(JSON), "json"))
	})
}

func TestRetentionPurgesInBatches(t *testing.T) {
	t.Parallel()
	testenv.ForEachDialect(t, func(t *testing.T, e *testenv.Env) {
		now := time.Now()
		writeAttempts(t, e, 1200, now.Add(-10*24*time.Hour), 3) // rows finished 10 days ago … 9.99 days ago
		writeAttempts(t, e, 300, now.Add(-time.Hour), 3)        // recent
		var calls int
		r := &Retention{Store: countingPurge{e.Store, &calls}, LogAge: 7 * 24 * time.Hour, Batch: 100, Pause: time.Millisecond}
		n, err := r.PurgeOnce(t.Context())
		require.NoError(t, err)
		require.Equal(t, int64(1200), n)
		require.GreaterOrEqual(t, calls, 12, "purged in batches of 100")
		left, err := e.Store.Attempts(t.Context(), queue.LogQuery{Limit: 1000})
		require.NoError(t, err)
		require.Len(t, left, 300, "recent rows stay")
	})
}

// A purge deletes the rows of nodes gone longer than NodeAge (a week unless
// set) and keeps the others.
func TestRetentionPurgesGoneNodes(t *testing.T) {
	t.Parallel()
	testenv.ForEachDialect(t, func(t *testing.T, e *testenv.Env) {
		require.NoError(t, e.Store.RegisterNode(t.Context(), queue.Node{ID: "gone"}))
		time.Sleep(500 * time.Millisecond)
		require.NoError(t, e.Store.RegisterNode(t.Context(), queue.Node{ID: "live"}))
		week := &Retention{Store: e.Store}
		_, err := week.PurgeOnce(t.Context())
		require.NoError(t, err)
		nodes, err := e.Store.Nodes(t.Context(), time.Hour)
		require.NoError(t, err)
		require.Len(t, nodes, 2, "by default a node goes after a week")

		require.NoError(t, e.Store.HeartbeatNode(t.Context(), "live", "{}"))
		r := &Retention{Store: e.Store, NodeAge: 250 * time.Millisecond}
		_, err = r.PurgeOnce(t.Context())
		require.NoError(t, err)
		nodes, err = e.Store.Nodes(t.Context(), time.Hour)
		require.NoError(t, err)
		require.Len(t, nodes, 1)
		require.Equal(t, "live", nodes[0].ID, "the node silent for longer than NodeAge went")
	})
}

type countingPurge struct {
	queue.Store
	calls *int
}

func (c countingPurge) PurgeAttempts(ctx context.Context, cutoff time.Time, batch int) (int64, error) {
	*c.calls++
	return c.Store.PurgeAttempts(ctx, cutoff, batch)
}
