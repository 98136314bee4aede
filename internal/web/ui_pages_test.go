package web

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/testenv"
	"readpast/internal/web/auth"
	"readpast/web/static"
)

// Every page renders from a real store, readable without any script, and the
// stylesheet is served at its content-hashed URL with a year of caching.
func TestPagesRender(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newUIEnv(t, uiOpts{dialect: d, node: true})
		ok := e.enqueue(queue.NewTask{Queue: "etl", Body: "CREATE TABLE pages_t (n int)"})[0]
		bad := e.enqueue(queue.NewTask{Queue: "etl", Body: "SELECT * FROM no_such_table", MaxAttempts: 1})[0]
		later := e.enqueue(queue.NewTask{Queue: "reports", Body: "SELECT 1", Delay: time.Hour, Group: "g1"})[0]
		e.waitState(ok, queue.StateSucceeded, 20*time.Second)
		e.waitState(bad, queue.StateFailed, 20*time.Second)

		home := e.get("/")
		require.Equal(t, http.StatusOK, home.status, home.body)
		require.Contains(t, home.body, `id="queue-etl"`, "the overview has a row per queue")
		require.Contains(t, home.body, `id="queue-reports"`)
		require.Contains(t, home.body, "<svg", "the throughput chart is drawn server-side")
		require.Contains(t, home.body, `data-live="count:etl:succeeded"`)
		require.Equal(t, "no-store", home.header.Get("Cache-Control"))
		require.Contains(t, home.body, `<a href="/?range=1h" class="active">1h</a>`, "the chart shows the last hour first")
		require.Contains(t, home.body, "finished / min")
		week := e.get("/?range=7d")
		require.Equal(t, http.StatusOK, week.status, week.body)
		require.Contains(t, week.body, `<a href="/?range=7d" class="active">7d</a>`, "the range switch is a plain link")
		require.Contains(t, week.body, "finished / hour")
		require.Contains(t, week.body, `data-live-query="range=7d"`, "the live chart keeps the range")
		require.Contains(t, week.body, "in the last 7 days")
		badRange := e.get("/?range=1y")
		require.Equal(t, http.StatusBadRequest, badRange.status)
		require.Contains(t, badRange.body, "is not one of 1h, 24h, 7d")

		tasks := e.get("/tasks?queue=etl")
		require.Equal(t, http.StatusOK, tasks.status)
		require.Contains(t, tasks.body, fmt.Sprintf(`data-id="%d"`, ok))
		require.Contains(t, tasks.body, fmt.Sprintf(`data-id="%d"`, bad))
		require.NotContains(t, tasks.body, fmt.Sprintf(`data-id="%d"`, later), "the queue filter applies")
		require.Contains(t, tasks.body, `/tasks/`+fmt.Sprint(bad)+`/retry`, "a failed task has a retry button")

		detail := e.get(fmt.Sprintf("/tasks/%d", later))
		require.Equal(t, http.StatusOK, detail.status)
		require.Contains(t, detail.body, "delayed until", "a pending task says why it waits")
		require.Contains(t, detail.body, "/cancel", "a pending task has a cancel button")

		failed := e.get(fmt.Sprintf("/tasks/%d", bad))
		require.Regexp(t, `class="err-line">[^<]*no_such_table`, failed.body, "the attempt's error is shown")

		logs := e.get("/logs")
		require.Equal(t, http.StatusOK, logs.status)
		require.Regexp(t, `class="err-line">[^<]*no_such_table`, logs.body, "the log shows the error")
		require.Contains(t, logs.body, "/logs/export?format=json")

		nodes := e.get("/nodes")
		require.Equal(t, http.StatusOK, nodes.status)
		require.Contains(t, nodes.body, "ui-test-node")
		require.Contains(t, nodes.body, "this node")

		form := e.get("/tasks/new")
		require.Equal(t, http.StatusOK, form.status)
		for _, field := range []string{"queue", "body", "priority", "delay", "available_at", "group", "chain", "stage",
			"max_attempts", "timeout_seconds", "transactional", "continue_on_failure", auth.CSRFField} {
			require.Contains(t, form.body, `name="`+field+`"`, "the enqueue form has every field")
		}
		require.Contains(t, e.get("/tasks/new?mode=script").body, `name="mode" value="script"`)

		css := e.get(static.URL("app.css"))
		require.Equal(t, http.StatusOK, css.status)
		require.Contains(t, css.header.Get("Content-Type"), "text/css")
		require.Contains(t, css.header.Get("Cache-Control"), "immutable")
		require.Equal(t, http.StatusNotFound, e.get("/static/app.css").status, "only hashed names are served")

		missing := e.get("/tasks/999999")
		require.Equal(t, http.StatusNotFound, missing.status)
		require.Contains(t, missing.body, "<html", "a missing task is an HTML page for a browser")

		badFilter := e.get("/tasks?state=sleeping")
		require.Equal(t, http.StatusBadRequest, badFilter.status)
		require.Contains(t, badFilter.body, "is not one of pending")
	})
}

// A body that is markup shows as text on the tasks list and the task page.
func TestPagesEscapeScriptBody(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newUIEnv(t, uiOpts{dialect: d})
		evil := `<script>alert(1)</script>`
		id := e.enqueue(queue.NewTask{Body: "SELECT '" + evil + "'", Group: `<b>g</b>`})[0]
		for _, path := range []string{"/tasks", fmt.Sprintf("/tasks/%d", id)} {
			p := e.get(path)
			require.Equal(t, http.StatusOK, p.status, path)
			require.NotContains(t, p.body, evil, path)
			require.NotContains(t, p.body, "<b>g</b>", path)
			require.Contains(t, p.body, "&lt;script&gt;alert(1)&lt;/script&gt;", "%s shows the body as text", path)
			require.NotContains(t, p.body, " style=", "%s: no inline styles (CSP style-src 'self')", path)
			require.Equal(t, 2, strings.Count(p.body, "<script"), "%s: the only scripts are the live-update and time-zone files", path)
			require.Equal(t, 2, strings.Count(p.body, `<script src="/static/`), "%s: no inline script", path)
		}
	})
}

// The websocket refuses a page from another origin, and an unknown view.
func TestLiveChecksOriginAndView(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newUIEnv(t, uiOpts{dialect: d})
		url := "ws" + strings.TrimPrefix(e.srv.URL, "http") + "/ws"
		h := http.Header{}
		h.Set("Origin", "http://evil.example")
		_, res, err := websocket.DefaultDialer.Dial(url+"?view=overview", h)
		require.Error(t, err)
		require.Equal(t, http.StatusForbidden, res.StatusCode, "a foreign origin is refused")

		h.Set("Origin", e.srv.URL)
		conn, res, err := websocket.DefaultDialer.Dial(url+"?view=overview", h)
		require.NoError(t, err, "the dashboard's own origin is accepted")
		res.Body.Close()
		conn.Close()

		for _, bad := range []string{"?view=everything", "?view=overview&range=1y"} {
			_, res, err = websocket.DefaultDialer.Dial(url+bad, nil)
			require.Error(t, err, bad)
			require.Equal(t, http.StatusBadRequest, res.StatusCode, bad)
		}
	})
}
