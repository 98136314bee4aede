package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/testenv"
	"readpast/internal/web/auth"
)

// The enqueue form takes every field of a task, and a script becomes one chain
// with a stage per GO block; refused fields come back with their message.
func TestEnqueueForm(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newUIEnv(t, uiOpts{dialect: d})
		// Every body here has line breaks, and the test is that they are kept.
		(&testenv.Env{Dialect: d, DSN: e.dsn}).SkipOnBabelfish(t, testenv.BabelfishJSONEscapes)

		p := e.post("/tasks/new", url.Values{"queue": {"etl"}, "body": {"SELECT 1\r\nGO\r\nSELECT 2"}, "priority": {"0"},
			"delay": {"90s"}, "group": {"loads"}, "chain": {"c1"}, "stage": {"3"}, "max_attempts": {"5"},
			"timeout_seconds": {"2.5"}, "transactional": {"true"}, "continue_on_failure": {"true"}})
		require.Equal(t, http.StatusSeeOther, p.status, p.body)
		var id int64
		_, err := fmt.Sscanf(p.location, "/tasks/%d", &id)
		require.NoError(t, err, "the form leads to the task: %s", p.location)
		task, err := e.store.Get(e.ctx, id)
		require.NoError(t, err)
		require.Equal(t, "etl", task.Queue)
		require.Equal(t, "SELECT 1\nGO\nSELECT 2", task.Body, "line ends are the browser's CRLF turned into LF")
		require.Equal(t, 0, task.Priority)
		require.Equal(t, "loads", task.Group)
		require.Equal(t, "c1", task.Chain)
		require.Equal(t, 3, task.Stage)
		require.Equal(t, 5, task.MaxAttempts)
		require.Equal(t, 2500*time.Millisecond, task.Timeout)
		require.True(t, task.Transactional)
		require.True(t, task.ContinueOnFailure)
		require.Equal(t, "local", task.CreatedBy)
		require.WithinDuration(t, time.Now().Add(90*time.Second), task.AvailableAt, 10*time.Second)
		require.Contains(t, e.get(p.location).body, fmt.Sprintf("Task %d enqueued on queue etl.", id), "a notice says what happened")

		at := e.post("/tasks/new", url.Values{"body": {"SELECT 1"}, "available_at": {"2031-02-03T04:05"}})
		require.Equal(t, http.StatusSeeOther, at.status, at.body)
		_, err = fmt.Sscanf(at.location, "/tasks/%d", &id)
		require.NoError(t, err)
		task, err = e.store.Get(e.ctx, id)
		require.NoError(t, err)
		require.Equal(t, time.Date(2031, 2, 3, 4, 5, 0, 0, time.UTC), task.AvailableAt.UTC(), "available_at is UTC")
		require.Equal(t, queue.DefaultQueue, task.Queue)

		script := e.post("/tasks/new", url.Values{"mode": {"script"}, "queue": {"etl"}, "chain": {"nightly"}, "group": {"g"},
			"body": {"TRUNCATE staging\ngo\n\nINSERT INTO staging SELECT 1\n  GO  \nEXEC merge\n"}})
		require.Equal(t, http.StatusSeeOther, script.status, script.body)
		require.Equal(t, "/tasks?chain=nightly", script.location)
		chain, err := e.store.List(e.ctx, queue.ListParams{Chain: "nightly"})
		require.NoError(t, err)
		require.Len(t, chain, 3, "one task per GO block")
		for i, want := range []string{"EXEC merge\n", "\nINSERT INTO staging SELECT 1\n", "TRUNCATE staging\n"} {
			require.Equal(t, want, chain[i].Body)
			require.Equal(t, 2-i, chain[i].Stage, "stages follow the blocks' order")
			require.Equal(t, "g", chain[i].Group, "the settings apply to every task")
		}
		require.Contains(t, e.get("/tasks?chain=nightly").body, "Chain nightly: 3 tasks enqueued")

		// Each block is the script's own text; GO inside a string is no separator,
		// and a block's "GO n" stays with it. (A browser sends a textarea's line
		// breaks as CRLF; the form stores them as typed, LF.)
		repeated := e.post("/tasks/new", url.Values{"mode": {"script"}, "chain": {"exact"},
			"body": {"SELECT 'a\r\nGO\r\n'\r\nGO\r\nINSERT INTO t VALUES (1)\r\nGO 3\r\nSELECT [it's]\r\n"}})
		require.Equal(t, http.StatusSeeOther, repeated.status, repeated.body)
		exact, err := e.store.List(e.ctx, queue.ListParams{Chain: "exact"})
		require.NoError(t, err)
		require.Len(t, exact, 3)
		require.Equal(t, []string{"SELECT [it's]\n", "INSERT INTO t VALUES (1)\nGO 3\n", "SELECT 'a\nGO\n'\n"},
			[]string{exact[0].Body, exact[1].Body, exact[2].Body})

		named := e.post("/tasks/new", url.Values{"mode": {"script"}, "body": {"SELECT 1\nGO\nSELECT 2"}})
		require.Equal(t, http.StatusSeeOther, named.status)
		require.True(t, strings.HasPrefix(named.location, "/tasks?chain=script-"), "an unnamed script gets a chain name: %s", named.location)

		for _, c := range []struct {
			form  url.Values
			field string
			msg   string
		}{
			{url.Values{"body": {"  "}}, "body", "is empty"},
			{url.Values{"body": {"SELECT 1"}, "priority": {"high"}}, "priority", "is not a whole number"},
			{url.Values{"body": {"SELECT 1"}, "priority": {"40000"}}, "priority", "use 0 (most urgent)"},
			{url.Values{"body": {"SELECT 1"}, "queue": {"no spaces"}}, "queue", "is not a queue name"},
			{url.Values{"body": {"SELECT 1"}, "delay": {"soon"}}, "delay", "is not a delay"},
			{url.Values{"body": {"SELECT 1"}, "delay": {"5m"}, "available_at": {"2031-01-01T00:00"}}, "available_at", "not both"},
			{url.Values{"body": {"SELECT 1"}, "stage": {"2"}}, "stage", "chain is empty"},
			{url.Values{"body": {"SELECT 1"}, "timeout_seconds": {"-1"}}, "timeout_seconds", "use 0"},
			{url.Values{"body": {"SELECT 1"}, "max_attempts": {"0"}}, "max_attempts", "use 1 to 1000"},
			{url.Values{"body": {"SELECT 1\x00"}}, "body", "NUL"},
			{url.Values{"body": {"SELECT 1"}, "group": {"g\x00"}}, "group", "NUL"},
			{url.Values{"body": {"SELECT \xff"}}, "body", "UTF-8"},
			{url.Values{"mode": {"script"}, "body": {"GO\nGO"}}, "body", "is empty"},
			{url.Values{"mode": {"script"}, "body": {"SELECT 1\nGO x\nSELECT 2"}}, "body", "line 2 (&#34;GO x&#34;): GO takes only a repeat count"},
		} {
			p := e.post("/tasks/new", c.form)
			require.Equal(t, http.StatusUnprocessableEntity, p.status, "%v is refused", c.form)
			require.Contains(t, p.body, c.msg, "%v: the message says why", c.form)
			require.Contains(t, p.body, `id="f-`, "the form is shown again")
			i := strings.Index(p.body, `class="field-error"`)
			require.Greater(t, i, 0, "%v: the message sits next to its field", c.form)
			require.Contains(t, p.body[:i], `name="`+c.field+`"`, "%v: the message follows the %s field", c.form, c.field)
			require.Contains(t, p.body, c.form.Get("body"), "what was typed is kept")
		}
		all, err := e.store.List(e.ctx, queue.ListParams{Limit: 1000})
		require.NoError(t, err)
		require.Len(t, all, 10, "refused forms wrote nothing")
	})
}

// Cancel and retry buttons act on the task and come back to the page.
func TestCancelAndRetryButtons(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newUIEnv(t, uiOpts{dialect: d})
		id := e.enqueue(queue.NewTask{Body: "SELECT 1", Delay: time.Hour})[0]

		p := e.post(fmt.Sprintf("/tasks/%d/cancel", id), url.Values{"return": {"/tasks?state=pending"}})
		require.Equal(t, http.StatusSeeOther, p.status, p.body)
		require.Equal(t, "/tasks?state=pending", p.location, "the button comes back to the page it was on")
		e.waitState(id, queue.StateCancelled, time.Second)
		require.Contains(t, e.get(p.location).body, fmt.Sprintf("Task %d cancelled.", id))

		again := e.post(fmt.Sprintf("/tasks/%d/cancel", id), url.Values{"return": {"//evil.example/"}})
		require.Equal(t, http.StatusSeeOther, again.status)
		require.Equal(t, fmt.Sprintf("/tasks/%d", id), again.location, "only local paths are followed")
		require.Contains(t, e.get(again.location).body, "was not cancelled")

		r := e.post(fmt.Sprintf("/tasks/%d/retry", id), url.Values{})
		require.Equal(t, http.StatusSeeOther, r.status)
		e.waitState(id, queue.StatePending, time.Second)

		require.Equal(t, http.StatusNotFound, e.post("/tasks/999999/cancel", url.Values{}).status)
	})
}

// The overview's queue controls pause, resume, resize and limit a queue, and
// add one; a refused value comes back next to its field.
func TestQueueControls(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newUIEnv(t, uiOpts{dialect: d})
		e.enqueue(queue.NewTask{Queue: "ctl", Body: "SELECT 1"})
		get := func() queue.Queue {
			qs, err := e.store.Queues(e.ctx)
			require.NoError(t, err)
			for _, q := range qs {
				if q.Name == "ctl" {
					return q
				}
			}
			t.Fatal("queue ctl is gone")
			return queue.Queue{}
		}

		p := e.post("/queues/ctl", url.Values{"paused": {"true"}})
		require.Equal(t, http.StatusSeeOther, p.status, p.body)
		require.Equal(t, "/", p.location)
		require.True(t, get().Paused)
		require.Equal(t, "local", get().UpdatedBy, "the change records who made it")
		home := e.get("/")
		require.Contains(t, home.body, "Queue ctl: paused=true")
		require.Contains(t, home.body, "Resume")

		require.Equal(t, http.StatusSeeOther, e.post("/queues/ctl", url.Values{"settings": {"1"}, "workers": {"7"}, "max_running": {"3"}}).status)
		q := get()
		require.Equal(t, 7, *q.Workers)
		require.Equal(t, 3, *q.MaxRunning)
		require.True(t, q.Paused, "settings leave pause alone")
		require.Equal(t, http.StatusSeeOther, e.post("/queues/ctl", url.Values{"settings": {"1"}, "workers": {"7"}, "max_running": {""}}).status)
		require.Nil(t, get().MaxRunning, "an empty max running removes the limit")
		require.Equal(t, http.StatusSeeOther, e.post("/queues/ctl", url.Values{"paused": {"false"}}).status)
		require.False(t, get().Paused)

		bad := e.post("/queues/ctl", url.Values{"settings": {"1"}, "workers": {"5000"}})
		require.Equal(t, http.StatusUnprocessableEntity, bad.status)
		row := bad.body[strings.Index(bad.body, `id="queue-ctl"`):]
		require.Contains(t, row[:strings.Index(row, "</tr>")], "use a whole number from 0 to 1000", "the message is in the queue's row")
		require.Contains(t, row, `value="5000"`, "the refused value is shown again")
		require.Equal(t, 7, *get().Workers, "nothing changed")

		add := e.post("/queues", url.Values{"name": {"fresh"}, "workers": {"2"}, "paused": {"true"}})
		require.Equal(t, http.StatusSeeOther, add.status, add.body)
		require.Contains(t, e.get("/").body, `id="queue-fresh"`)
		badName := e.post("/queues", url.Values{"name": {"bad name"}})
		require.Equal(t, http.StatusUnprocessableEntity, badName.status)
		require.Contains(t, badName.body, "is not a queue name")
	})
}

// Every form needs its CSRF token.
func TestFormsNeedCSRFToken(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newUIEnv(t, uiOpts{dialect: d})
		id := e.enqueue(queue.NewTask{Body: "SELECT 1", Delay: time.Hour})[0]
		for _, path := range []string{"/tasks/new", fmt.Sprintf("/tasks/%d/cancel", id), "/queues/default", "/queues"} {
			p := e.post(path, url.Values{auth.CSRFField: {"forged"}, "body": {"SELECT 1"}, "paused": {"true"}, "name": {"x"}})
			require.Equal(t, http.StatusForbidden, p.status, "%s without a valid token", path)
		}
		task, err := e.store.Get(e.ctx, id)
		require.NoError(t, err)
		require.Equal(t, queue.StatePending, task.State)
	})
}

// A viewer reads every page but sees no buttons and cannot post.
func TestViewerCannotOperate(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		env := newAPIEnv(t, apiOpts{dialect: d, tokens: true})
		id, err := env.store.Enqueue(env.ctx, []queue.NewTask{{Body: "SELECT 1", Delay: time.Hour}})
		require.NoError(t, err)
		for _, path := range []string{"/", "/tasks", fmt.Sprintf("/tasks/%d", id[0].ID), "/logs", "/nodes"} {
			req := env.newRequest("GET", path, testViewerToken, "")
			req.Header.Set("Accept", "text/html")
			r := env.send(req, nil)
			require.Equal(t, http.StatusOK, r.status, path)
			require.NotContains(t, string(r.body), "/cancel", "%s: a viewer sees no cancel button", path)
			require.NotContains(t, string(r.body), `action="/queues`, "%s: nor queue controls", path)
		}
		req := env.newRequest("GET", "/tasks/new", testViewerToken, "")
		req.Header.Set("Accept", "text/html")
		require.Equal(t, http.StatusForbidden, env.send(req, nil).status, "the enqueue form is the operator's")
		post := env.newRequest("POST", fmt.Sprintf("/tasks/%d/cancel", id[0].ID), testViewerToken, "")
		post.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		require.Equal(t, http.StatusForbidden, env.send(post, nil).status)
		unauth := env.newRequest("GET", "/tasks", "", "")
		unauth.Header.Set("Accept", "text/html")
		r := env.send(unauth, nil)
		require.Equal(t, http.StatusSeeOther, r.status, "without credentials a page asks to sign in")
		require.Contains(t, r.header.Get("Location"), "/login")
	})
}
