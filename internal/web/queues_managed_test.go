package web

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/testenv"
	"readpast/internal/web/api"
)

// A URL naming no queue is 404 and never makes a queue (before, POST
// /queues/no-such-queue made a paused queue forever); queues are made on
// purpose (the overview's add form, POST /api/queues) and deleted when they
// hold no task, audited.
func TestQueuesManaged(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newUIEnv(t, uiOpts{dialect: d})
		a := newAPIEnv(t, apiOpts{dialect: d, tokens: true})
		op := "alice:" + testOperatorToken
		names := func(s queue.Store) []string {
			qs, err := s.Queues(e.ctx)
			require.NoError(t, err)
			var out []string
			for _, q := range qs {
				out = append(out, q.Name)
			}
			return out
		}

		p := e.post("/queues/no-such-queue", url.Values{"paused": {"true"}})
		require.Equal(t, http.StatusNotFound, p.status, "a mistyped queue URL is not found")
		require.Contains(t, p.body, "there is no queue no-such-queue")
		require.Empty(t, names(e.store), "and makes no queue")
		r := a.call("PATCH", "/api/queues/no-such-queue", op, `{"paused":true}`)
		require.Equal(t, http.StatusNotFound, r.status, r.body)
		require.Equal(t, "there is no queue no-such-queue", r.errorMsg(t))
		require.Empty(t, names(a.store))

		// Made on purpose: the add form and POST /api/queues.
		add := e.post("/queues", url.Values{"name": {"spare"}, "workers": {"2"}})
		require.Equal(t, http.StatusSeeOther, add.status, add.body)
		again := e.post("/queues", url.Values{"name": {"spare"}})
		require.Equal(t, http.StatusUnprocessableEntity, again.status)
		require.Contains(t, again.body, "a queue of this name exists already")
		r = a.call("POST", "/api/queues", op, `{"name":"etl","max_running":3,"paused":true}`)
		require.Equal(t, http.StatusCreated, r.status, r.body)
		var q api.Queue
		r.json(t, &q)
		require.True(t, q.Paused)
		require.Equal(t, 3, *q.MaxRunning)
		require.Equal(t, "/api/queues/etl", r.header.Get("Location"))
		require.Equal(t, http.StatusConflict, a.call("POST", "/api/queues", op, `{"name":"etl"}`).status)
		require.Equal(t, http.StatusBadRequest, a.call("POST", "/api/queues", op, `{}`).status)
		require.Equal(t, http.StatusForbidden, a.call("POST", "/api/queues", testViewerToken, `{"name":"x"}`).status)
		require.Equal(t, http.StatusOK, a.call("PATCH", "/api/queues/etl", op, `{"paused":false}`).status, "a known queue changes")

		// Deleted when it holds no task; refused while it holds some.
		home := e.get("/")
		require.Contains(t, home.body, `action="/queues/spare/delete"`, "an empty queue has a Delete button")
		e.enqueue(queue.NewTask{Queue: "spare", Body: "SELECT 1", Delay: 3600e9})
		busy := e.post("/queues/spare/delete", url.Values{})
		require.Equal(t, http.StatusConflict, busy.status)
		require.Contains(t, busy.body, "queue spare still has pending or running tasks")
		require.NotContains(t, e.get("/").body, `action="/queues/spare/delete"`, "a queue with tasks has none")
		e.enqueue(queue.NewTask{Queue: "typo", Body: "SELECT 1", Delay: 3600e9})
		_, err := e.store.UpdateQueue(e.ctx, "empty", queue.QueueUpdate{Actor: "test"})
		require.NoError(t, err)
		del := e.post("/queues/empty/delete", url.Values{})
		require.Equal(t, http.StatusSeeOther, del.status, del.body)
		require.Contains(t, e.get(del.location).body, "Queue empty deleted.")
		require.NotContains(t, names(e.store), "empty")
		require.Equal(t, http.StatusNotFound, e.post("/queues/empty/delete", url.Values{}).status)

		a.enqueue(op, `{"body":"SELECT 1","queue":"held","delay_seconds":3600}`)
		r = a.call("DELETE", "/api/queues/held", op, "")
		require.Equal(t, http.StatusConflict, r.status, r.body)
		require.Equal(t, "queue held still has pending or running tasks: cancel them or let them finish, then delete it",
			r.errorMsg(t), "the refusal is one sentence, without prefixes")
		r = a.call("DELETE", "/api/queues/etl", testViewerToken, "")
		require.Equal(t, http.StatusForbidden, r.status, "the viewer deletes nothing")
		r = a.call("DELETE", "/api/queues/etl", op, "")
		require.Equal(t, http.StatusNoContent, r.status, r.body)
		require.EqualValues(t, 1, a.audited(t, "operator:alice", "delete_queue", "queue etl"), "the delete is audited")
		require.Equal(t, http.StatusNotFound, a.call("DELETE", "/api/queues/etl", op, "").status)
	})
}
