package ui

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/testenv"
	"readpast/internal/web/webtest"
)

// The chart draws every range from the throughput rollups, never from the
// log: with the log purged it still counts every attempt of the range, and
// its reads are one per range per refresh interval.
func TestChartReadsRollupsNotTheLog(t *testing.T) {
	t.Parallel()
	testenv.ForEachDialect(t, func(t *testing.T, e *testenv.Env) {
		webtest.SeedHistory(t, e.Ctx, e.Store, "hist", 300, 10)
		n, err := e.Store.PurgeAttempts(e.Ctx, time.Now().Add(time.Hour), queue.MaxPurgeBatch)
		require.NoError(t, err)
		require.Equal(t, int64(300), n, "the log is gone; the rollups stay")

		tp := newThroughput(e.Store)
		for _, r := range chartRanges {
			now := time.Now()
			pts, err := tp.points(e.Ctx, r, now)
			require.NoError(t, err)
			chart, sparks := r.draw(pts, now, nil, []string{"hist", "idle"})
			require.Contains(t, chart.Title, "300 attempts finished in the last "+r.last, r.name)
			require.Contains(t, sparks["hist"].Title, "300 finished", r.name)
			require.Empty(t, sparks["idle"].Bars, "%s: a queue without history has an empty trend", r.name)
			require.NotEmpty(t, chart.Bars, r.name)
			require.NotEmpty(t, chart.RunningPath, r.name)
		}

		// Within the refresh interval a range is not read again; after it, it is.
		r := chartRanges[0]
		now := time.Now()
		webtest.SeedAttempts(t, e.Ctx, e.Store, "hist", 50, 0, false)
		pts, err := tp.points(e.Ctx, r, now)
		require.NoError(t, err)
		chart, _ := r.draw(pts, now, nil, nil)
		require.Contains(t, chart.Title, "300 attempts", "read again within %s", tp.every)
		now = now.Add(tp.every)
		pts, err = tp.points(e.Ctx, r, now)
		require.NoError(t, err)
		chart, _ = r.draw(pts, now, nil, nil)
		require.Contains(t, chart.Title, "350 attempts", "new attempts show after the refresh interval")
	})
}

// A bucket's running time is spread back from its middle over its attempts'
// average duration; tasks running now count from their start.
func TestChartRunningArea(t *testing.T) {
	t.Parallel()
	r := chartRanges[0] // minutes
	now := time.Unix(1000*60+30, 0)
	first := r.first(now)
	require.Equal(t, time.Unix(941*60, 0), first, "60 buckets up to the current minute")
	// Two attempts that ran 10 minutes each and finished in minute 990.
	pts := []queue.ThroughputPoint{{At: time.Unix(990*60, 0), Queue: "q", Outcome: queue.OutcomeSucceeded, N: 2, Busy: 20 * time.Minute}}
	chart, _ := r.draw(pts, now, []runningSince{{started: now.Add(-90 * time.Second)}}, []string{"q"})
	require.Contains(t, chart.Title, "2 attempts finished in the last hour")
	running := func(minute int) float64 {
		b, _ := r.bucketsOf(pts, now, []runningSince{{started: now.Add(-90 * time.Second)}})
		return b[minute-941].Running
	}
	require.InDelta(t, 2.0, running(985), 1e-9, "both attempts ran during minute 985")
	require.InDelta(t, 1.0, running(980), 1e-9, "they began half way through minute 980")
	require.InDelta(t, 0.0, running(979), 1e-9)
	require.InDelta(t, 0.0, running(995), 1e-9)
	require.InDelta(t, 1.0, running(999), 1e-9, "a task running now counts from its start")
	require.InDelta(t, 1.0, running(1000), 1e-9, "the current minute is measured up to now")
}

// spreadBusy splits running time over the buckets it covers.
func TestSpreadBusy(t *testing.T) {
	t.Parallel()
	first := time.Unix(600*60, 0)
	got := map[int]time.Duration{}
	add := func(i int, d time.Duration) { got[i] += d }
	spreadBusy(first.Add(30*time.Second), first.Add(2*time.Minute+15*time.Second), first, time.Minute, add)
	require.Equal(t, map[int]time.Duration{0: 30 * time.Second, 1: time.Minute, 2: 15 * time.Second}, got)
	got = map[int]time.Duration{}
	spreadBusy(first.Add(-5*time.Minute), first.Add(10*time.Second), first, time.Minute, add)
	require.Equal(t, map[int]time.Duration{0: 10 * time.Second}, got, "time before the chart is left out")
}

// The range is one of the three the chart offers.
func TestParseChartRange(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"1h", "24h", "7d"} {
		r, err := parseChartRange(name)
		require.NoError(t, err)
		require.Equal(t, name, r.name)
	}
	r, err := parseChartRange("")
	require.NoError(t, err)
	require.Equal(t, "1h", r.name, "the default")
	_, err = parseChartRange("30d")
	require.True(t, queue.IsValidation(err))
	require.ErrorContains(t, err, "1h, 24h, 7d")
}
