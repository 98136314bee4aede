package ui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/schedule"
	"readpast/internal/testenv"
)

// latestRow is the newest rendering of a row the client was sent.
func (c *wsClient) latestRow(id string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.messages) - 1; i >= 0; i-- {
		if html, ok := c.messages[i].Rows[id]; ok {
			return html
		}
	}
	return ""
}

// An open schedules page follows every change without a reload: a pause, a
// run and its outcome, a schedule created or deleted elsewhere.
func TestLiveSchedulesFollowChanges(t *testing.T) {
	t.Parallel()
	testenv.ForEachDialect(t, func(t *testing.T, e *testenv.Env) {
		_, url := newLiveServer(t, e, defaultLiveOptions())
		s, err := schedule.Editor{Store: e.Store}.CreateSchedule(e.Ctx, queue.ScheduleDef{Name: "nightly", Cron: "0 1 * * *", TimeZone: "Europe/Paris",
			Task: queue.ScheduleTask{Queue: "maint", Body: "SELECT 1"}}, "test")
		require.NoError(t, err)
		id := fmt.Sprint(s.ID)
		c := dialLive(t, url+"?view=schedules", nil)
		go c.read()
		waitRow := func(what, want string) {
			t.Helper()
			require.Eventually(t, func() bool { return strings.Contains(c.latestRow(id), want) }, 10*time.Second, 20*time.Millisecond,
				"%s: the row shows %q; it is %s", what, want, c.latestRow(id))
		}
		waitRow("the snapshot", "CET")
		paused := true
		_, err = schedule.Editor{Store: e.Store}.UpdateSchedule(e.Ctx, "nightly", queue.ScheduleUpdate{Paused: &paused, Actor: "elsewhere"})
		require.NoError(t, err)
		waitRow("a pause", "st-paused")
		run, err := e.Store.RunSchedule(e.Ctx, "nightly", "elsewhere", nil)
		require.NoError(t, err)
		waitRow("a run", fmt.Sprintf(`href="/tasks/%d"`, run.ID))
		_, err = e.Store.Cancel(e.Ctx, run.ID, "elsewhere")
		require.NoError(t, err)
		waitRow("the run's outcome", "st-cancelled")

		other, err := schedule.Editor{Store: e.Store}.CreateSchedule(e.Ctx, queue.ScheduleDef{Name: "hourly", Cron: "@hourly",
			Task: queue.ScheduleTask{Body: "SELECT 1"}}, "elsewhere")
		require.NoError(t, err)
		order := func() []string { _, _, _, o := c.snapshot(); return o }
		require.Eventually(t, func() bool { return len(order()) == 2 }, 10*time.Second, 20*time.Millisecond, "a new schedule's row appears")
		require.Equal(t, []string{fmt.Sprint(other.ID), id}, order(), "by name")
		require.NoError(t, e.Store.DeleteSchedule(e.Ctx, "nightly", "elsewhere"))
		require.Eventually(t, func() bool { return len(order()) == 1 }, 10*time.Second, 20*time.Millisecond, "a deleted schedule's row goes")
	})
}
