package web

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/schedule"
)

// A queue paused elsewhere (the API, another dashboard) turns its open
// overview row's button into Resume, not only its badge; the button then
// resumes it, and a resume elsewhere turns it back into Pause.
func TestBrowserPauseElsewhereFlipsButton(t *testing.T) {
	t.Parallel()
	tab, _ := newBrowser(t)
	e := newUIEnv(t, uiOpts{dialect: browserDialect})
	e.enqueue(queue.NewTask{Queue: "far", Body: "SELECT 1", Delay: time.Hour})
	require.NoError(t, chromedp.Do(tab, chromedp.Navigate(e.srv.URL+"/")))
	require.Eventually(t, func() bool { return liveOn(tab) }, 10*time.Second, 50*time.Millisecond)
	markPage(t, tab)
	button := "#queue-far form.toggle button"
	require.Equal(t, "Pause", textOf(tab, button))

	setPaused := func(p bool) {
		_, err := e.store.UpdateQueue(e.ctx, "far", queue.QueueUpdate{Paused: &p, Actor: "elsewhere"})
		require.NoError(t, err)
	}
	setPaused(true)
	require.Eventually(t, func() bool { return textOf(tab, "#queue-far .badge.st-paused:not(.hidden)") == "paused" },
		10*time.Second, 20*time.Millisecond, "the row shows paused")
	require.Equal(t, "Resume", textOf(tab, button), "the row's button offers to resume the paused queue")
	require.True(t, pageMarked(tab), "without a reload")

	submit(t, tab, button)
	q := e.queueNamed("far")
	require.False(t, q.Paused, "the button resumed the queue")

	require.NoError(t, chromedp.Do(tab, chromedp.Navigate(e.srv.URL+"/")))
	require.Eventually(t, func() bool { return liveOn(tab) }, 10*time.Second, 50*time.Millisecond)
	setPaused(true)
	require.Eventually(t, func() bool { return textOf(tab, button) == "Resume" }, 10*time.Second, 20*time.Millisecond)
	setPaused(false)
	require.Eventually(t, func() bool { return textOf(tab, button) == "Pause" }, 10*time.Second, 20*time.Millisecond,
		"a resume elsewhere turns the button back into Pause")
}

// queueNamed reads one queue's settings from the store.
func (e *uiEnv) queueNamed(name string) queue.Queue {
	e.t.Helper()
	qs, err := e.store.QueueSettings(e.ctx)
	require.NoError(e.t, err)
	for _, q := range qs {
		if q.Name == name {
			return q
		}
	}
	e.t.Fatalf("no queue %s", name)
	return queue.Queue{}
}

// The schedules page shows a schedule's task body readably: the first line
// whole (wrapped, not cut to a few characters), the rest on hover.
func TestBrowserSchedulesShowBody(t *testing.T) {
	t.Parallel()
	tab, _ := newBrowser(t)
	e := newUIEnv(t, uiOpts{dialect: browserDialect})
	const body = "EXEC dbo.rebuild_indexes @fill_factor = 90, @online = 1, @max_dop = 4"
	_, err := schedule.Editor{Store: e.store}.CreateSchedule(e.ctx, queue.ScheduleDef{Name: "nightly", Cron: "0 1 * * *", TimeZone: "Europe/Paris",
		Task: queue.ScheduleTask{Queue: "maintenance", Body: body + "\nEXEC dbo.update_stats"}}, "test")
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(tab, chromedp.EmulateViewport(1280, 720), chromedp.Navigate(e.srv.URL+"/schedules")))
	code := "#schedule-nightly td.body code"
	require.Contains(t, textOf(tab, code), body, "the first line is all there")
	cut, err := chromedp.Run(tab, chromedp.Evaluate[bool](fmt.Sprintf(
		`(function(){var e=document.querySelector(%q);return e.scrollWidth > e.clientWidth + 1})()`, code)))
	require.NoError(t, err)
	require.False(t, cut, "the body is not cut off by its cell")
	shown, err := chromedp.Run(tab, chromedp.Evaluate[float64](fmt.Sprintf(
		`document.querySelector(%q).getBoundingClientRect().width`, code)))
	require.NoError(t, err)
	require.Greater(t, shown, 150.0, "the body's cell is wide enough to read")
	title, err := chromedp.Run(tab, chromedp.Evaluate[string](fmt.Sprintf(`document.querySelector(%q).title`, code)))
	require.NoError(t, err)
	require.Contains(t, title, "EXEC dbo.update_stats", "the whole body is on hover")
}

// The audit page in a browser: a pause made with the overview's button is
// the newest row (who, what, which queue, when), reached from the
// navigation; its object link opens the queue's tasks.
func TestBrowserAuditPage(t *testing.T) {
	t.Parallel()
	tab, _ := newBrowser(t)
	e := newUIEnv(t, uiOpts{dialect: browserDialect})
	e.enqueue(queue.NewTask{Queue: "nightly", Body: "SELECT 1", Delay: time.Hour})
	require.NoError(t, chromedp.Do(tab, chromedp.Navigate(e.srv.URL+"/")))
	submit(t, tab, "#queue-nightly form.toggle button")

	loc := submit(t, tab, `header nav a[href="/audit"]`)
	require.Equal(t, e.srv.URL+"/audit", loc)
	row := "table.audit tbody tr:first-child"
	require.Equal(t, "local", textOf(tab, row+" td:nth-child(2)"), "who")
	require.Equal(t, "update_queue", textOf(tab, row+" td:nth-child(3)"), "what")
	require.Equal(t, "queue nightly", textOf(tab, row+" td:nth-child(4)"), "which object")
	require.Contains(t, textOf(tab, row+" td:nth-child(5)"), "paused=true", "what changed")
	require.NotEmpty(t, textOf(tab, row+" td:nth-child(1) time"), "when")
	shoot(t, tab, screenshots(t), "audit")

	loc = submit(t, tab, row+" td:nth-child(4) a")
	require.Equal(t, e.srv.URL+"/tasks?queue=nightly", loc, "the object's link opens its tasks")
}

// The groups page in a browser: the operator sets a group's limit in its
// row, and the page comes back with the new limit and who set it.
func TestBrowserGroupsPage(t *testing.T) {
	t.Parallel()
	tab, _ := newBrowser(t)
	e := newUIEnv(t, uiOpts{dialect: browserDialect})
	e.enqueue(queue.NewTask{Body: "SELECT 1", Group: "nightly", Delay: time.Hour},
		queue.NewTask{Body: "SELECT 1", Group: "nightly", Delay: time.Hour})
	require.NoError(t, chromedp.Do(tab, chromedp.Navigate(e.srv.URL+"/")))
	loc := submit(t, tab, `header nav a[href="/groups"]`)
	require.Equal(t, e.srv.URL+"/groups", loc)
	row := "#group-nightly"
	require.Equal(t, "2", textOf(tab, row+" td:nth-child(4)"), "two pending")
	require.NoError(t, chromedp.Do(tab, chromedp.SetValue(chromedp.CSS(row+` input[name="max_running"]`), "5")))
	loc = submit(t, tab, row+" form.limit button")
	require.Equal(t, e.srv.URL+"/groups", loc)
	require.Contains(t, textOf(tab, ".flash"), "Group nightly: at most 5 running at once.")
	val, err := chromedp.Run(tab, chromedp.Evaluate[string](`document.querySelector('#group-nightly input[name="max_running"]').value`))
	require.NoError(t, err)
	require.Equal(t, "5", val)
	require.Equal(t, "local", textOf(tab, row+" td:nth-child(5)"), "who changed it")
	shoot(t, tab, screenshots(t), "groups")
}
