package ui

import (
	"testing"
	"time"

	"readpast/internal/testenv"
	"readpast/internal/web/webtest"

	"github.com/stretchr/testify/require"
)

// The chart counts every finished attempt of the last hour once, however often
// it refreshes, and reads only new rows each time; minutes it could not read
// completely are marked, not drawn as quiet.
func TestThroughputCountsOnce(t *testing.T) {
	t.Parallel()
	e := testenv.New(t, testenv.SQLite)
	webtest.SeedHistory(t, e.Ctx, e.Store, "hist", 300, 10)

	tp := newThroughput(e.Store)
	tp.every = 0
	now := time.Now()
	require.NoError(t, tp.refresh(e.Ctx, now))
	count := func() (ok, bad int64, busy time.Duration) {
		for _, m := range tp.minutes {
			ok, bad, busy = ok+m.ok, bad+m.bad, busy+m.busy
		}
		return
	}
	ok, bad, busy := count()
	require.Equal(t, int64(300), ok+bad, "every attempt of the hour is counted")
	require.Equal(t, int64(30), bad, "every tenth failed")
	require.Greater(t, busy, time.Duration(0), "running time is counted")

	require.NoError(t, tp.refresh(e.Ctx, now.Add(time.Second)))
	ok2, bad2, busy2 := count()
	require.Equal(t, ok+bad, ok2+bad2, "a second refresh counts nothing twice")
	require.Equal(t, busy, busy2)

	webtest.SeedAttempts(t, e.Ctx, e.Store, "hist", 50, 0, false)
	require.NoError(t, tp.refresh(e.Ctx, time.Now()))
	ok3, bad3, _ := count()
	require.Equal(t, int64(350), ok3+bad3, "new rows are added")

	chart, sparks := tp.draw(time.Now(), []runningSince{{started: time.Now().Add(-90 * time.Second)}}, []string{"hist", "idle"})
	require.NotEmpty(t, chart.Bars)
	require.Empty(t, chart.Gaps)
	require.Contains(t, chart.Title, "350 attempts finished")
	require.NotEmpty(t, sparks["hist"].Bars)
	require.Empty(t, sparks["idle"].Bars, "a queue without history has an empty trend")

	capped := newThroughput(e.Store)
	capped.every, capped.rowCap, capped.pageSize = 0, 100, 50
	require.NoError(t, capped.refresh(e.Ctx, time.Now()))
	require.NotEmpty(t, capped.missing, "minutes beyond what one refresh reads are marked")
	chart, _ = capped.draw(time.Now(), nil, nil)
	require.NotEmpty(t, chart.Gaps)
	require.Contains(t, chart.Note, "hatched")
}

// spreadBusy splits running time over the minutes it covers.
func TestSpreadBusy(t *testing.T) {
	t.Parallel()
	base := time.Unix(600*60, 0)
	got := map[int64]time.Duration{}
	spreadBusy(base.Add(30*time.Second), base.Add(2*time.Minute+15*time.Second), 600, func(m int64, d time.Duration) { got[m] += d })
	require.Equal(t, map[int64]time.Duration{600: 30 * time.Second, 601: time.Minute, 602: 15 * time.Second}, got)
	got = map[int64]time.Duration{}
	spreadBusy(base.Add(-5*time.Minute), base.Add(10*time.Second), 600, func(m int64, d time.Duration) { got[m] += d })
	require.Equal(t, map[int64]time.Duration{600: 10 * time.Second}, got, "time before the window is left out")
}
