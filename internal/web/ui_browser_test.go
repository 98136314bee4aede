package web

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"readpast/internal/logs"
	"readpast/internal/queue"
	"readpast/internal/testenv"
	"readpast/internal/web/webtest"
)

// Every page, as a laptop shows it, with a working day's data: the pictures
// are for people to look at (READPAST_SCREENSHOTS=<dir> keeps them); the test
// checks that each page loads, styles itself and goes live.
func TestBrowserScreenshots(t *testing.T) {
	t.Parallel()
	tab, _ := newBrowser(t)
	e := newUIEnv(t, uiOpts{dialect: browserDialect, node: true})
	webtest.SeedDemo(t, e.ctx, e.store)
	dir := screenshots(t)
	require.Eventually(t, func() bool {
		l, err := e.store.List(e.ctx, queue.ListParams{State: queue.StateRunning})
		return err == nil && len(l) >= 2
	}, 20*time.Second, 50*time.Millisecond, "the demo's long tasks start")

	failed, err := e.store.List(e.ctx, queue.ListParams{Queue: "etl", State: queue.StateFailed, Limit: 1})
	require.NoError(t, err)
	pending, err := e.store.List(e.ctx, queue.ListParams{Queue: "maintenance", State: queue.StatePending, Limit: 1})
	require.NoError(t, err)
	require.NotEmpty(t, pending)

	pages := []struct{ name, path string }{
		{"overview", "/"},
		{"tasks", "/tasks"},
		{"task-waiting", fmt.Sprintf("/tasks/%d", pending[0].ID)},
		{"logs", "/logs"},
		{"nodes", "/nodes"},
		{"schedules", "/schedules"},
		{"schedule-edit", "/schedules/nightly-index-rebuild/edit"},
		{"enqueue", "/tasks/new"},
		{"enqueue-script", "/tasks/new?mode=script"},
		{"groups", "/groups"},
		{"audit", "/audit"},
	}
	if len(failed) > 0 {
		pages = append(pages, struct{ name, path string }{"task-failed", fmt.Sprintf("/tasks/%d", failed[0].ID)})
	}
	for _, p := range pages {
		require.NoError(t, chromedp.Do(tab, chromedp.Navigate(e.srv.URL+p.path)), p.path)
		bg, err := chromedp.Run(tab, chromedp.Evaluate[string](`getComputedStyle(document.querySelector('header.top')).backgroundColor`))
		require.NoError(t, err)
		require.NotEqual(t, "rgba(0, 0, 0, 0)", bg, "%s: the stylesheet applies", p.path)
		// Forms and the groups and audit pages are not live.
		if !strings.HasPrefix(p.name, "enqueue") && p.name != "schedule-edit" && p.name != "groups" && p.name != "audit" {
			require.Eventually(t, func() bool { return liveOn(tab) }, 10*time.Second, 50*time.Millisecond,
				"%s: the live socket connects", p.path)
		}
		shoot(t, tab, dir, p.name)
	}

	// A smaller laptop screen.
	require.NoError(t, chromedp.Do(tab, chromedp.EmulateViewport(1280, 720)))
	for _, p := range pages[:2] {
		require.NoError(t, chromedp.Do(tab, chromedp.Navigate(e.srv.URL+p.path)))
		shoot(t, tab, dir, p.name+"-1280")
	}

	// The sign-in page of a dashboard with tokens.
	secured := newAPIEnv(t, apiOpts{dialect: browserDialect, tokens: true})
	require.NoError(t, chromedp.Do(tab, chromedp.EmulateViewport(1440, 900), chromedp.Navigate(secured.srv.URL+"/tasks")))
	loc, err := chromedp.Run(tab, chromedp.Location())
	require.NoError(t, err)
	require.Contains(t, loc, "/login", "a page without a session asks to sign in")
	shoot(t, tab, dir, "login")
}

// liveOn reports whether the page's websocket is connected and has its snapshot.
func liveOn(tab context.Context) bool {
	on, err := chromedp.Run(tab, chromedp.Evaluate[bool](`(function(){var e=document.getElementById('live-status');return !!e && e.classList.contains('on')})()`))
	return err == nil && on
}

// submit clicks a form's button and waits for the page the redirect leads to.
// A live update may replace the button's row between the moment chromedp finds
// the button and its click (CI, under load: "Could not find node with given
// id"); the click is then made again on the new row, which nothing submitted.
func submit(t *testing.T, tab context.Context, button string) string {
	t.Helper()
	var err error
	for try := 0; try < 5; try++ {
		if _, err = chromedp.RunResponse(tab, chromedp.Click(chromedp.CSS(button))); err == nil ||
			!strings.Contains(err.Error(), "Could not find node with given id") {
			break
		}
	}
	require.NoError(t, err, "submitting with %s", button)
	loc, err := chromedp.Run(tab, chromedp.Location())
	require.NoError(t, err)
	return loc
}

// markPage leaves a value in the page's window; it survives only if the page
// is never reloaded.
func markPage(t *testing.T, tab context.Context) {
	t.Helper()
	require.NoError(t, chromedp.Do(tab, chromedp.Evaluate[chromedp.Void](`window.readpastMark = 'not reloaded'`)))
}

func pageMarked(tab context.Context) bool {
	v, err := chromedp.Run(tab, chromedp.Evaluate[string](`window.readpastMark || ''`))
	return err == nil && v == "not reloaded"
}

// A task enqueued through the form appears on an open tasks page and goes
// pending → running → succeeded there without a reload; resuming its queue
// with the overview's button is what lets it run.
func TestBrowserEnqueueAndWatchRow(t *testing.T) {
	t.Parallel()
	tasks, newTab := newBrowser(t)
	e := newUIEnv(t, uiOpts{dialect: browserDialect, node: true})
	paused := true
	_, err := e.store.UpdateQueue(e.ctx, "web", queue.QueueUpdate{Paused: &paused, Actor: "test"})
	require.NoError(t, err)

	require.NoError(t, chromedp.Do(tasks, chromedp.Navigate(e.srv.URL+"/tasks?queue=web")))
	require.Eventually(t, func() bool { return liveOn(tasks) }, 10*time.Second, 50*time.Millisecond, "the tasks page goes live")
	markPage(t, tasks)

	form := newTab()
	require.NoError(t, chromedp.Do(form,
		chromedp.Navigate(e.srv.URL+"/tasks/new"),
		chromedp.SetValue(chromedp.ID("f-queue"), "web"),
		chromedp.SetValue(chromedp.ID("f-body"), testenv.SleepBody(t, browserDialect, 3*time.Second)),
		chromedp.SetValue(chromedp.ID("f-priority"), "7"),
		chromedp.SetValue(chromedp.ID("f-attempts"), "2"),
		chromedp.SetValue(chromedp.ID("f-timeout"), "120"),
	))
	loc := submit(t, form, "#enqueue-form button[type=submit]")
	var id int64
	_, err = fmt.Sscanf(loc, e.srv.URL+"/tasks/%d", &id)
	require.NoError(t, err, "the form leads to the new task's page, not %s", loc)
	task, err := e.store.Get(e.ctx, id)
	require.NoError(t, err)
	require.Equal(t, "web", task.Queue)
	require.Equal(t, 7, task.Priority)
	require.Equal(t, 2, task.MaxAttempts)
	require.Equal(t, 120*time.Second, task.Timeout)
	require.Equal(t, "local", task.CreatedBy)
	require.Contains(t, textOf(form, ".why"), "queue web is paused", "the task page says why it waits")

	badge := fmt.Sprintf(`tr[data-id="%d"] .badge`, id)
	var seen []string
	observe := func() string {
		st := textOf(tasks, badge)
		if st != "" && (len(seen) == 0 || seen[len(seen)-1] != st) {
			seen = append(seen, st)
		}
		return st
	}
	require.Eventually(t, func() bool { return observe() == "pending" }, 10*time.Second, 20*time.Millisecond,
		"the new task's row appears on the open tasks page")

	require.NoError(t, chromedp.Do(form, chromedp.Navigate(e.srv.URL+"/")))
	submit(t, form, "#queue-web button.resume")
	require.Contains(t, textOf(form, ".flash"), "paused=false")

	require.Eventually(t, func() bool { return observe() == "succeeded" }, 60*time.Second, 20*time.Millisecond,
		"the row reaches succeeded; seen %v", seen)
	require.Equal(t, []string{"pending", "running", "succeeded"}, seen, "the row went through each state in place")
	require.True(t, pageMarked(tasks), "the tasks page was never reloaded")
}

// Pausing a queue on the overview stops its workers (running tasks finish,
// nothing new starts), and the workers setting resizes the pool; the counts
// and workers cells follow without a reload.
func TestBrowserPauseAndResize(t *testing.T) {
	t.Parallel()
	tab, _ := newBrowser(t)
	e := newUIEnv(t, uiOpts{dialect: browserDialect, node: true})
	two := 2
	_, err := e.store.UpdateQueue(e.ctx, "busy", queue.QueueUpdate{Workers: &two, Actor: "test"})
	require.NoError(t, err)
	body := testenv.SleepBody(t, browserDialect, 1500*time.Millisecond)
	var batch []queue.NewTask
	for range 12 {
		batch = append(batch, queue.NewTask{Queue: "busy", Body: body})
	}
	e.enqueue(batch...)

	require.NoError(t, chromedp.Do(tab, chromedp.Navigate(e.srv.URL+"/")))
	require.Eventually(t, func() bool { return liveOn(tab) }, 10*time.Second, 50*time.Millisecond)
	busy, size := `[data-live="busy:busy"]`, `[data-live="size:busy"]`
	require.Eventually(t, func() bool { return textOf(tab, busy) == "2" && textOf(tab, size) == "2" }, 20*time.Second, 20*time.Millisecond,
		"two workers run (busy %q of %q)", textOf(tab, busy), textOf(tab, size))

	submit(t, tab, "#queue-busy button.pause")
	require.Contains(t, textOf(tab, ".flash"), "paused")
	shown, err := chromedp.Run(tab, chromedp.Evaluate[bool](`document.querySelector('#queue-busy .badge.st-paused').offsetParent !== null`))
	require.NoError(t, err)
	require.True(t, shown, "the paused badge shows")
	markPage(t, tab)
	require.Eventually(t, func() bool { return textOf(tab, busy) == "0" }, 30*time.Second, 20*time.Millisecond,
		"the workers stop once their running tasks finish")
	pending := textOf(tab, `[data-live="count:busy:pending"]`)
	require.NotEqual(t, "0", pending, "tasks are left waiting")
	time.Sleep(1500 * time.Millisecond)
	require.Equal(t, pending, textOf(tab, `[data-live="count:busy:pending"]`), "a paused queue starts nothing")
	require.Equal(t, "0", textOf(tab, busy))
	require.True(t, pageMarked(tab), "the overview followed without a reload")

	require.NoError(t, chromedp.Do(tab, chromedp.SetValue(chromedp.CSS(`#queue-busy input[name=workers]`), "3")))
	submit(t, tab, "#queue-busy form.settings button")
	require.Contains(t, textOf(tab, ".flash"), "workers=3")
	submit(t, tab, "#queue-busy button.resume")
	markPage(t, tab)
	require.Eventually(t, func() bool { return textOf(tab, size) == "3" && textOf(tab, busy) == "3" }, 20*time.Second, 20*time.Millisecond,
		"three workers run after the resize (busy %q of %q)", textOf(tab, busy), textOf(tab, size))
	require.True(t, pageMarked(tab))
}

// The log page's JSON export downloads every attempt of the filter.
func TestBrowserExportJSON(t *testing.T) {
	t.Parallel()
	tab, _ := newBrowser(t)
	e := newUIEnv(t, uiOpts{dialect: browserDialect, node: true})
	ok := e.enqueue(queue.NewTask{Queue: "exp", Body: "SELECT 1"})[0]
	bad := e.enqueue(queue.NewTask{Queue: "exp", Body: "SELECT * FROM nowhere", MaxAttempts: 1})[0]
	e.waitState(ok, queue.StateSucceeded, 20*time.Second)
	e.waitState(bad, queue.StateFailed, 20*time.Second)

	dir := t.TempDir()
	require.NoError(t, chromedp.Do(tab,
		chromedp.Navigate(e.srv.URL+"/logs?queue=exp"),
		chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Call(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
				Behavior: browser.SetDownloadBehaviorBehaviorAllowAndName, DownloadPath: dir, EventsEnabled: ptrBool(true)})
			return err
		}),
		chromedp.Click(chromedp.ID("export-json")),
	))
	var rows []logs.Row
	require.Eventually(t, func() bool {
		files, _ := os.ReadDir(dir)
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(dir, f.Name()))
			if err == nil && json.Unmarshal(b, &rows) == nil {
				return true
			}
		}
		return false
	}, 20*time.Second, 50*time.Millisecond, "the export downloads a JSON array")
	require.Len(t, rows, 2, "both attempts of queue exp")
	outcomes := map[int64]string{}
	for _, r := range rows {
		outcomes[r.TaskID] = r.Outcome
	}
	require.Equal(t, map[int64]string{ok: "succeeded", bad: "failed"}, outcomes)
}

func ptrBool(b bool) *bool { return &b }

// A dropped socket reconnects by itself and the new snapshot brings the page
// up to date with what changed while it was away, without a reload.
func TestBrowserReconnects(t *testing.T) {
	t.Parallel()
	tab, _ := newBrowser(t)
	e := newUIEnv(t, uiOpts{dialect: browserDialect})
	e.enqueue(queue.NewTask{Queue: "rc", Body: "SELECT 1", Delay: time.Hour})
	proxy := newTCPProxy(t, strings.TrimPrefix(e.srv.URL, "http://"))

	require.NoError(t, chromedp.Do(tab, chromedp.Navigate(proxy.url()+"/")))
	require.Eventually(t, func() bool { return liveOn(tab) }, 10*time.Second, 50*time.Millisecond)
	markPage(t, tab)
	pending := `[data-live="count:rc:pending"]`
	require.Equal(t, "1", textOf(tab, pending))

	proxy.dropAll()
	require.Eventually(t, func() bool { return !liveOn(tab) }, 10*time.Second, 20*time.Millisecond, "the page notices the socket dropped")
	e.enqueue(queue.NewTask{Queue: "rc", Body: "SELECT 2", Delay: time.Hour}, queue.NewTask{Queue: "rc", Body: "SELECT 3", Delay: time.Hour})
	require.Eventually(t, func() bool { return liveOn(tab) && textOf(tab, pending) == "3" }, 20*time.Second, 20*time.Millisecond,
		"the page reconnects and resynchronises (pending shows %q)", textOf(tab, pending))
	require.True(t, pageMarked(tab), "without a reload")
}

// A queue made elsewhere (another dashboard, the API, a first enqueue) shows
// on an open overview without the operator reloading it; while the operator
// types into a form the page waits for the field to lose focus.
func TestBrowserNewQueueAppears(t *testing.T) {
	t.Parallel()
	tab, _ := newBrowser(t)
	e := newUIEnv(t, uiOpts{dialect: browserDialect})
	e.enqueue(queue.NewTask{Queue: "first", Body: "SELECT 1"})
	require.NoError(t, chromedp.Do(tab, chromedp.Navigate(e.srv.URL+"/")))
	require.Eventually(t, func() bool { return liveOn(tab) }, 10*time.Second, 50*time.Millisecond)
	rows := func() int {
		n, err := chromedp.Run(tab, chromedp.Evaluate[int](`document.querySelectorAll('table.queues tbody tr[id^="queue-"]').length`))
		if err != nil {
			return -1
		}
		return n
	}
	require.Equal(t, 1, rows())

	two := 2
	_, err := e.store.UpdateQueue(e.ctx, "second", queue.QueueUpdate{Workers: &two, Actor: "elsewhere"})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return rows() == 2 && textOf(tab, "#queue-second .name a") == "second" },
		10*time.Second, 50*time.Millisecond, "the new queue's row appears")
	require.Eventually(t, func() bool { return liveOn(tab) }, 10*time.Second, 50*time.Millisecond)

	// An operator typing a workers value is not interrupted.
	require.NoError(t, chromedp.Do(tab, chromedp.Focus(`#queue-first input[name=workers]`)))
	markPage(t, tab)
	e.enqueue(queue.NewTask{Queue: "third", Body: "SELECT 1"})
	time.Sleep(1500 * time.Millisecond) // three ticks
	require.True(t, pageMarked(tab), "the page reloaded under the operator's typing")
	require.Equal(t, 2, rows())
	require.NoError(t, chromedp.Do(tab, chromedp.Blur(`#queue-first input[name=workers]`)))
	require.Eventually(t, func() bool { return rows() == 3 }, 10*time.Second, 50*time.Millisecond,
		"once the field is left, the page shows the third queue")
}
