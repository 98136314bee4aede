package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"readpast/internal/bench"
	"readpast/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// `readpast bench` measures every part on a small scale on each dialect and
// prints the table, then JSON with figures that hold together. (The figures
// themselves are docs/BENCHMARKS.md's business, never asserted here.)
func TestBenchRunsEveryPart(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			dsn := testenv.NewDSN(t, d)
			// The backlog and purge parts settle statistics after their bulk
			// builds.
			(&testenv.Env{Dialect: d, DSN: dsn}).SkipOnBabelfish(t, testenv.BabelfishUpdateStatistics)
			var out, errOut bytes.Buffer
			code := benchCmd(context.Background(), []string{"--dsn", dsn, "--tasks", "400", "--workers", "8",
				"--latency-tasks", "20", "--latency-rate", "100", "--depths", "50,200", "--idle-for", "2s",
				"--backlog", "300", "--history", "100,300", "--history-requests", "3",
				"--only", "throughput,latency,depth,idle,backlog,history"},
				envOf(nil), &out, &errOut)
			require.Equal(t, 0, code, "stderr:\n%s", errOut.String())
			text := out.String()
			for _, line := range []string{"end to end", "enqueue→start", "claim (batch 1)", "idle node", "history goal"} {
				require.Contains(t, text, line)
			}
			var r bench.Report
			require.NoError(t, json.Unmarshal([]byte(text[strings.Index(text, "{"):]), &r))
			require.Equal(t, d, r.Dialect)
			require.NotNil(t, r.Throughput)
			require.Equal(t, 400, r.Throughput.Tasks)
			require.Positive(t, r.Throughput.EndToEndPerSec)
			require.Positive(t, r.Throughput.PeakRSSMB)
			// Where the slots' time went, and the target's limit without the
			// queue beside the drain (issue 32).
			require.Contains(t, text, "limit: body and reset, no queue")
			require.NotNil(t, r.Throughput.Slots)
			require.Positive(t, r.Throughput.Slots.Body)
			require.Positive(t, r.Throughput.Slots.TasksPerClaim)
			require.NotNil(t, r.Throughput.Limit)
			require.Positive(t, r.Throughput.Limit.BodyPerSec)
			require.Positive(t, r.Throughput.Limit.NamedPerSec)
			require.Positive(t, r.Throughput.OfBodyLimit)
			if string(d) == "sqlite" {
				require.Positive(t, r.Throughput.Limit.OneConnPerSec)
				require.Positive(t, r.Throughput.OfOneConnSQL)
			}
			if string(d) == "postgres" {
				// Claims and completions are batched: fewer commits than tasks.
				require.Positive(t, r.Throughput.WriteTxPerTask)
				require.Less(t, r.Throughput.WriteTxPerTask, 1.0)
			}
			require.NotNil(t, r.Latency)
			require.Positive(t, r.Latency.StartP50)
			require.LessOrEqual(t, r.Latency.StartP50, r.Latency.FinishP50)
			require.Len(t, r.Depth, 3, "each depth, and the first again with history")
			require.Len(t, r.Backlog, 5, "no backlog, a full group, delayed, both, another target")
			require.Equal(t, 600, r.Backlog[3].Blocked)
			require.Equal(t, 300, r.Backlog[4].Blocked, "the other target's ready tasks")
			for _, b := range r.Backlog {
				require.Positive(t, b.P50, b.Backlog)
			}

			require.NotNil(t, r.Idle)
			require.LessOrEqual(t, r.Idle.PerQueuePerSec, 2.0)
			kinds := historyKinds(t, r.History)
			require.Len(t, r.History, 3*kinds, "every kind of request without history and at each size")
			for _, h := range r.History[:kinds] {
				require.Equal(t, 1.0, h.P50Ratio, "%s %s is the baseline", h.Kind, h.Request)
			}
			require.Equal(t, r.History[0].Finished+100, r.History[kinds].Finished, "the history grew to 100")
			require.Equal(t, r.History[0].Finished+300, r.History[2*kinds].Finished, "then to 300")

			// A second run on the same database measures this run's tasks only,
			// leaves the depth part's pending tasks alone while it drains and
			// idles, and reports the depths it finds.
			out.Reset()
			code = benchCmd(context.Background(), []string{"--dsn", dsn, "--tasks", "300", "--workers", "8",
				"--latency-tasks", "10", "--latency-rate", "100", "--depths", "100,200", "--idle-for", "2s",
				"--backlog", "300", "--history", "300", "--history-requests", "3", "--purge", "400"},
				envOf(nil), &out, &errOut)
			require.Equal(t, 0, code, "stderr:\n%s", errOut.String())
			text = out.String()
			r = bench.Report{}
			require.NoError(t, json.Unmarshal([]byte(text[strings.Index(text, "{"):]), &r))
			require.Equal(t, 300, r.Throughput.Tasks)
			require.LessOrEqual(t, r.Idle.PerQueuePerSec, 2.0, "the paused depth queue keeps the node idle")
			require.Len(t, r.Depth, 2, "the history is there already")
			require.Equal(t, 200, r.Depth[0].Pending, "the depth found, not the one asked for")
			require.Equal(t, 200, r.Depth[0].Finished)
			require.Len(t, r.History, historyKinds(t, r.History), "its history is there already: measured as found")
			require.Equal(t, 300, r.Backlog[1].Blocked, "the backlogs are found, not built again")
			// The purge part runs last: it purges every finished task.
			require.NotNil(t, r.Purge)
			require.GreaterOrEqual(t, r.Purge.Finished, 400, "its history, with its log rows")
			require.Positive(t, r.Purge.ClaimsDuring)
		})
	}
}

// historyKinds is how many kinds of request the history part measured: they
// repeat in the same order at each size.
func historyKinds(t *testing.T, hs []bench.HistoryResult) int {
	t.Helper()
	require.NotEmpty(t, hs)
	for i, h := range hs {
		require.Positive(t, h.P50, "%s %s", h.Kind, h.Request)
		if i > 0 && h.Kind == hs[0].Kind && h.Request == hs[0].Request {
			return i
		}
	}
	return len(hs)
}

// Bad flags are refused with a word on what to give instead.
func TestBenchRefusesBadFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--depths", "10,x"}, {"--depths", "0"}, {"--only", "speed"}, {"--history", "1k"},
		{"--history-requests", "0"}} {
		var out, errOut bytes.Buffer
		require.Equal(t, 2, benchCmd(context.Background(), args, envOf(nil), &out, &errOut), "%v", args)
		require.Contains(t, errOut.String(), args[0], "%v", args)
	}
}
