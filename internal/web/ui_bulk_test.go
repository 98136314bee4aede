package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/testenv"
)

// runBulks runs the server's bulk runner until the test ends.
func (e *uiEnv) runBulks() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.server.RunBulks(ctx) }()
	e.t.Cleanup(func() { cancel(); <-done })
}

// enqueueMany enqueues n tasks of queue q, delayed so that nothing claims them.
func (e *uiEnv) enqueueMany(q string, n int) {
	e.t.Helper()
	tasks := make([]queue.NewTask, n)
	for i := range tasks {
		tasks[i] = queue.NewTask{Queue: q, Body: fmt.Sprintf("SELECT %d", i), Delay: time.Hour}
	}
	e.enqueue(tasks...)
}

// The tasks page offers the bulk actions of its filter with the count; the
// confirmation counts and describes the filter; the form starts the
// operation and its page follows it to the end.
func TestBulkPages(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newUIEnv(t, uiOpts{dialect: d})
		e.runBulks()
		e.enqueueMany("etl", 3)
		e.enqueueMany("keep", 1)

		p := e.get("/tasks?queue=etl&state=pending")
		require.Equal(t, http.StatusOK, p.status)
		require.Contains(t, p.body, `href="/tasks/bulk?action=cancel&amp;queue=etl&amp;state=pending"`)
		require.Contains(t, p.body, "Cancel all 3 matching")
		require.NotContains(t, p.body, "Retry all", "retry does not apply to pending tasks")

		p = e.get("/tasks/bulk?action=cancel&queue=etl&state=pending")
		require.Equal(t, http.StatusOK, p.status)
		require.Contains(t, p.body, "Cancel 3 tasks?")
		require.Contains(t, p.body, "state pending, queue etl")
		require.Equal(t, http.StatusBadRequest, e.get("/tasks/bulk?action=drop&queue=etl").status)
		require.Equal(t, http.StatusBadRequest, e.get("/tasks/bulk?action=cancel&state=done").status)
		require.Contains(t, e.get("/tasks/bulk?action=delete&queue=none").body, "No task matches")

		p = e.post("/tasks/bulk", url.Values{"action": {"cancel"}, "queue": {"etl"}, "state": {"pending"}})
		require.Equal(t, http.StatusSeeOther, p.status, "%s", p.body)
		require.True(t, strings.HasPrefix(p.location, "/bulk/"), p.location)
		require.Eventually(t, func() bool {
			return strings.Contains(e.get(p.location).body, "Finished: 3 tasks done, 0 skipped.")
		}, time.Minute, 50*time.Millisecond)
		page := e.get(p.location)
		require.NotContains(t, page.body, `http-equiv="refresh"`, "a finished operation's page stops reloading")
		require.Equal(t, http.StatusNotFound, e.get("/bulk/999").status)

		n, err := e.store.CountTasks(e.ctx, queue.ListParams{Queue: "keep", State: queue.StatePending}, 10)
		require.NoError(t, err)
		require.Equal(t, int64(1), n, "another queue is left alone")
	})
}

// In a browser: "Cancel all 250 matching" on the tasks page of a filter,
// the confirmation with the count, and the progress page that follows the
// operation, in batches, to its end.
func TestBrowserBulkCancelByFilter(t *testing.T) {
	t.Parallel()
	tab, _ := newBrowser(t)
	e := newUIEnv(t, uiOpts{dialect: browserDialect})
	e.runBulks()
	e.enqueueMany("etl", 250)
	e.enqueueMany("keep", 3)
	require.NoError(t, chromedp.Do(tab, chromedp.Navigate(e.srv.URL+"/tasks?queue=etl&state=pending")))
	link := "#bulk-actions a"
	require.Equal(t, "Cancel all 250 matching", textOf(tab, link))

	loc := submit(t, tab, link)
	require.Equal(t, e.srv.URL+"/tasks/bulk?action=cancel&queue=etl&state=pending", loc)
	require.Equal(t, "Cancel 250 tasks?", textOf(tab, "#bulk-question"))
	shoot(t, tab, screenshots(t), "bulk-confirm")

	loc = submit(t, tab, "#bulk-confirm")
	require.True(t, strings.HasPrefix(loc, e.srv.URL+"/bulk/"), loc)
	require.Eventually(t, func() bool { return textOf(tab, "#bulk-status") == "Finished: 250 tasks done, 0 skipped." },
		time.Minute, 100*time.Millisecond, "the page follows the operation to its end")
	require.Equal(t, "250", textOf(tab, "#bulk-done"))
	shoot(t, tab, screenshots(t), "bulk-done")

	n, err := e.store.CountTasks(e.ctx, queue.ListParams{Queue: "etl", State: queue.StateCancelled}, 1000)
	require.NoError(t, err)
	require.Equal(t, int64(250), n)
	n, err = e.store.CountTasks(e.ctx, queue.ListParams{Queue: "keep", State: queue.StatePending}, 1000)
	require.NoError(t, err)
	require.Equal(t, int64(3), n)
}

// A finished task's page offers Requeue, Delete and "Clone and edit": the
// clone fills the enqueue form with its fields, requeue makes a new task,
// delete removes it with its log rows.
func TestTaskRequeueDeleteClonePages(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newUIEnv(t, uiOpts{dialect: d})
		prio := 7
		ids := e.enqueue(queue.NewTask{Queue: "rq", Body: "SELECT 'cloned'", Priority: &prio, Group: "gq", MaxAttempts: 2, Timeout: 90 * time.Second})
		claimed, err := e.store.Claim(e.ctx, queue.ClaimParams{Queue: "rq", Owner: "t/w", Limit: 1, LeaseDuration: time.Minute})
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		require.NotContains(t, e.get(fmt.Sprintf("/tasks/%d", ids[0])).body, "/requeue", "a running task is not requeued")
		_, err = e.store.Finish(e.ctx, []queue.Attempt{{Lease: claimed[0].Lease(), Outcome: queue.OutcomeSucceeded, StartedAt: time.Now(), FinishedAt: time.Now()}})
		require.NoError(t, err)

		p := e.get(fmt.Sprintf("/tasks/%d", ids[0]))
		require.Contains(t, p.body, fmt.Sprintf(`action="/tasks/%d/requeue"`, ids[0]))
		require.Contains(t, p.body, fmt.Sprintf(`action="/tasks/%d/delete"`, ids[0]))
		require.Contains(t, p.body, fmt.Sprintf(`href="/tasks/new?clone=%d"`, ids[0]))

		form := e.get(fmt.Sprintf("/tasks/new?clone=%d", ids[0]))
		require.Equal(t, http.StatusOK, form.status)
		for _, want := range []string{`SELECT &#39;cloned&#39;</textarea>`, `name="queue" value="rq"`, `name="priority" value="7"`,
			`name="group" value="gq"`, `name="max_attempts" value="2"`, `name="timeout_seconds" value="90"`} {
			require.Contains(t, form.body, want)
		}
		require.Equal(t, http.StatusBadRequest, e.get("/tasks/new?clone=x").status)
		require.Equal(t, http.StatusNotFound, e.get("/tasks/new?clone=999999").status)

		r := e.post(fmt.Sprintf("/tasks/%d/requeue", ids[0]), url.Values{})
		require.Equal(t, http.StatusSeeOther, r.status, "%s", r.body)
		require.NotEqual(t, fmt.Sprintf("/tasks/%d", ids[0]), r.location)
		var again int64
		_, err = fmt.Sscanf(r.location, "/tasks/%d", &again)
		require.NoError(t, err)
		nt, err := e.store.Get(e.ctx, again)
		require.NoError(t, err)
		require.Equal(t, queue.StatePending, nt.State)
		require.Equal(t, "SELECT 'cloned'", nt.Body)

		r = e.post(fmt.Sprintf("/tasks/%d/delete", again), url.Values{})
		require.Equal(t, http.StatusSeeOther, r.status)
		_, err = e.store.Get(e.ctx, again)
		require.NoError(t, err, "a pending task is not deleted")
		r = e.post(fmt.Sprintf("/tasks/%d/delete", ids[0]), url.Values{})
		require.Equal(t, http.StatusSeeOther, r.status)
		require.Equal(t, "/tasks", r.location)
		_, err = e.store.Get(e.ctx, ids[0])
		require.ErrorIs(t, err, queue.ErrNotFound)
	})
}

// The enqueue form's name: the task page shows it, the tasks list shows it
// instead of the body's first line, and the search finds it.
func TestTaskNamePages(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newUIEnv(t, uiOpts{dialect: d})
		p := e.post("/tasks/new", url.Values{"body": {"EXEC etl.LoadOrders @day = 1"}, "queue": {"nm"}, "name": {"Load orders, day 1"}})
		require.Equal(t, http.StatusSeeOther, p.status, "%s", p.body)
		page := e.get(p.location)
		require.Contains(t, page.body, "Load orders, day 1")
		list := e.get("/tasks?queue=nm")
		require.Contains(t, list.body, "<code>Load orders, day 1</code>", "the name instead of the body's first line")
		require.NotContains(t, list.body, "<code>EXEC etl.LoadOrders")
		found := e.get("/tasks?text=orders,%20day")
		require.Contains(t, found.body, "Load orders, day 1")
		bad := e.post("/tasks/new", url.Values{"body": {"SELECT 1"}, "name": {strings.Repeat("n", 201)}})
		require.Equal(t, http.StatusUnprocessableEntity, bad.status)
	})
}

// The selected rows: each row of the tasks page has a checkbox for an
// operator; "Cancel selected" asks with the count of the selected tasks and
// cancels those only.
func TestBulkSelectedPages(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newUIEnv(t, uiOpts{dialect: d})
		e.runBulks()
		ids := e.enqueue(queue.NewTask{Queue: "sel", Body: "SELECT 1", Delay: time.Hour}, queue.NewTask{Queue: "sel", Body: "SELECT 2", Delay: time.Hour},
			queue.NewTask{Queue: "sel", Body: "SELECT 3", Delay: time.Hour})
		p := e.get("/tasks?queue=sel")
		require.Contains(t, p.body, fmt.Sprintf(`name="id" value="%d" form="bulk-selected"`, ids[0]))
		require.Contains(t, p.body, `id="bulk-selected"`)

		p = e.get(fmt.Sprintf("/tasks/bulk?action=cancel&id=%d&id=%d&id=%d", ids[0], ids[2], ids[2]))
		require.Equal(t, http.StatusOK, p.status, "%s", p.body)
		require.Contains(t, p.body, "Cancel 2 tasks?", "a repeated id counts once")
		require.Contains(t, p.body, fmt.Sprintf(`name="id" value="%d"`, ids[2]))
		require.Equal(t, http.StatusBadRequest, e.get("/tasks/bulk?action=cancel&id=x").status)

		r := e.post("/tasks/bulk", url.Values{"action": {"cancel"}, "id": {fmt.Sprint(ids[0]), fmt.Sprint(ids[2])}})
		require.Equal(t, http.StatusSeeOther, r.status, "%s", r.body)
		require.Eventually(t, func() bool {
			return strings.Contains(e.get(r.location).body, "Finished: 2 tasks done, 0 skipped.")
		}, time.Minute, 50*time.Millisecond)
		for i, want := range []queue.State{queue.StateCancelled, queue.StatePending, queue.StateCancelled} {
			got, err := e.store.Get(e.ctx, ids[i])
			require.NoError(t, err)
			require.Equal(t, want, got.State, "task %d", ids[i])
		}
	})
}

// In a browser: tick two rows, "Cancel selected", confirm; the third stays.
func TestBrowserBulkCancelSelected(t *testing.T) {
	t.Parallel()
	tab, _ := newBrowser(t)
	e := newUIEnv(t, uiOpts{dialect: browserDialect})
	e.runBulks()
	ids := e.enqueue(queue.NewTask{Queue: "sel", Body: "SELECT 1", Delay: time.Hour}, queue.NewTask{Queue: "sel", Body: "SELECT 2", Delay: time.Hour},
		queue.NewTask{Queue: "sel", Body: "SELECT 3", Delay: time.Hour})
	require.NoError(t, chromedp.Do(tab, chromedp.Navigate(e.srv.URL+"/tasks?queue=sel")))
	for _, id := range []int64{ids[0], ids[1]} {
		require.NoError(t, chromedp.Do(tab, chromedp.Click(chromedp.CSS(fmt.Sprintf(`tr[data-id="%d"] input[name=id]`, id)))))
	}
	submit(t, tab, `#bulk-selected button[value=cancel]`)
	require.Equal(t, "Cancel 2 tasks?", textOf(tab, "#bulk-question"))
	loc := submit(t, tab, "#bulk-confirm")
	require.True(t, strings.HasPrefix(loc, e.srv.URL+"/bulk/"), loc)
	require.Eventually(t, func() bool { return textOf(tab, "#bulk-status") == "Finished: 2 tasks done, 0 skipped." },
		time.Minute, 100*time.Millisecond)
	got, err := e.store.Get(e.ctx, ids[2])
	require.NoError(t, err)
	require.Equal(t, queue.StatePending, got.State, "the task not selected stays")
}
