package web

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/testenv"
	"readpast/internal/web/api"
)

// runBulks runs the server's bulk runner until the test ends.
func (e *apiEnv) runBulks(t testing.TB) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.server.RunBulks(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// waitBulk polls GET /api/bulk/{id} until the operation has ended.
func (e *apiEnv) waitBulk(id int64) api.Bulk {
	e.t.Helper()
	var b api.Bulk
	require.Eventually(e.t, func() bool {
		r := e.call("GET", fmt.Sprintf("/api/bulk/%d", id), testViewerToken, "")
		require.Equal(e.t, http.StatusOK, r.status, "%s", r.body)
		r.json(e.t, &b)
		return b.FinishedAt != nil
	}, time.Minute, 50*time.Millisecond, "bulk operation %d ends", id)
	return b
}

// Bulk cancel by the list's filter, bulk retry by ids, the count the page
// shows, following an operation, and what is refused.
func TestAPIBulkActions(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newAPIEnv(t, apiOpts{dialect: d, tokens: true})
		e.runBulks(t)
		alice := "alice:" + testOperatorToken
		var tasks []string
		for i := range 130 {
			tasks = append(tasks, fmt.Sprintf(`{"body":"SELECT %d","queue":"etl"}`, i))
		}
		r := e.call("POST", "/api/tasks/batch", alice, `{"tasks":[`+strings.Join(tasks, ",")+`,{"body":"SELECT 1","queue":"keep"}]}`)
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)

		var count api.TaskCount
		r = e.call("GET", "/api/tasks/count?queue=etl&state=pending", testViewerToken, "")
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		r.json(t, &count)
		require.Equal(t, api.TaskCount{Count: 130}, count)

		r = e.call("POST", "/api/tasks/cancel", alice, `{"filter":{"queue":"etl","state":"pending"}}`)
		require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
		var b api.Bulk
		r.json(t, &b)
		require.Equal(t, fmt.Sprintf("/api/bulk/%d", b.ID), r.header.Get("Location"))
		require.Equal(t, int64(130), b.Matched)
		require.Equal(t, "operator:alice", b.CreatedBy)
		require.Equal(t, "etl", b.Selection.Filter.Queue)
		b = e.waitBulk(b.ID)
		require.Equal(t, [2]int64{130, 0}, [2]int64{b.Done, b.Skipped})
		require.Nil(t, b.Error)
		r = e.call("GET", "/api/tasks/count?queue=etl&state=cancelled", testViewerToken, "")
		r.json(t, &count)
		require.Equal(t, int64(130), count.Count)
		r = e.call("GET", "/api/tasks/count?queue=keep&state=pending", testViewerToken, "")
		r.json(t, &count)
		require.Equal(t, int64(1), count.Count, "another queue is left alone")
		audit := e.auditRows()
		require.Contains(t, audit, fmt.Sprintf(`operator:alice bulk_cancel bulk %d {"filter":{"state":"pending","queue":"etl"}} matching 130`, b.ID))
		require.Contains(t, audit, fmt.Sprintf(`operator:alice bulk_cancel_done bulk %d done 130, skipped 0`, b.ID))

		// Retry two of them by id.
		var page api.TaskPage
		r = e.call("GET", "/api/tasks?queue=etl&limit=2", testViewerToken, "")
		r.json(t, &page)
		r = e.call("POST", "/api/tasks/retry", alice, fmt.Sprintf(`{"ids":[%d,%d,%d]}`, page.Tasks[0].ID, page.Tasks[1].ID, page.Tasks[0].ID))
		require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
		r.json(t, &b)
		require.Equal(t, int64(2), b.Matched)
		b = e.waitBulk(b.ID)
		require.Equal(t, int64(2), b.Done)
		e.waitState(page.Tasks[0].ID, queue.StatePending, time.Second)

		var list api.BulkPage
		r = e.call("GET", "/api/bulk?limit=1", testViewerToken, "")
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		r.json(t, &list)
		require.Len(t, list.Bulk, 1)
		require.Equal(t, b.ID, list.Bulk[0].ID, "newest first")
		require.NotNil(t, list.NextCursor)

		for _, c := range []struct {
			path, body, field string
		}{
			{"/api/tasks/cancel", `{}`, "filter"},
			{"/api/tasks/cancel", `{"filter":{"nope":"x"}}`, ""},
			{"/api/tasks/cancel", `{"filter":{"state":"done"}}`, "state"},
			{"/api/tasks/retry", `{"ids":[0]}`, "ids"},
			{"/api/tasks/delete", `{"ids":[1],"filter":{}}`, "ids"},
		} {
			r = e.call("POST", c.path, alice, c.body)
			require.Equal(t, http.StatusBadRequest, r.status, "%s %s: %s", c.path, c.body, r.body)
			var eb api.ErrorBody
			r.json(t, &eb)
			if c.field != "" {
				require.Equal(t, c.field, eb.Field, "%s", r.body)
			}
		}
		r = e.call("POST", "/api/tasks/cancel", testViewerToken, `{"filter":{}}`)
		require.Equal(t, http.StatusForbidden, r.status, "a viewer cannot: %s", r.body)
		r = e.call("GET", "/api/bulk/999", testViewerToken, "")
		require.Equal(t, http.StatusNotFound, r.status, "%s", r.body)
		r = e.call("GET", "/api/tasks/count?nope=1", testViewerToken, "")
		require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
	})
}

// Requeue a succeeded task as a new one; delete a finished task with its log
// rows; an unfinished task is refused both.
func TestAPIRequeueAndDelete(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newAPIEnv(t, apiOpts{dialect: d, tokens: true})
		task := e.enqueue(testOperatorToken, `{"body":"SELECT 42","queue":"rq","priority":7,"max_attempts":2,"timeout_seconds":30}`)
		claimed, err := e.store.Claim(e.ctx, queue.ClaimParams{Queue: "rq", Owner: "t/w", Limit: 1, LeaseDuration: time.Minute})
		require.NoError(t, err)
		r := e.call("POST", fmt.Sprintf("/api/tasks/%d/requeue", task.ID), testOperatorToken, "")
		require.Equal(t, http.StatusConflict, r.status, "a running task is not requeued: %s", r.body)
		_, err = e.store.Finish(e.ctx, []queue.Attempt{{Lease: claimed[0].Lease(), Outcome: queue.OutcomeSucceeded,
			StartedAt: time.Now(), FinishedAt: time.Now()}})
		require.NoError(t, err)

		r = e.call("POST", fmt.Sprintf("/api/tasks/%d/requeue", task.ID), "ann:"+testOperatorToken, "")
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
		var again api.Enqueued
		r.json(t, &again)
		require.NotEqual(t, task.ID, again.Task.ID)
		require.Equal(t, "SELECT 42", again.Task.Body)
		require.Equal(t, "rq", again.Task.Queue)
		require.Equal(t, 7, again.Task.Priority)
		require.Equal(t, 2, again.Task.MaxAttempts)
		require.Equal(t, "pending", again.Task.State)
		require.Equal(t, "operator:ann", *again.Task.CreatedBy)

		r = e.call("DELETE", fmt.Sprintf("/api/tasks/%d", again.Task.ID), testOperatorToken, "")
		require.Equal(t, http.StatusConflict, r.status, "a pending task is not deleted: %s", r.body)
		require.Contains(t, r.errorMsg(t), "cancel it first")
		r = e.call("DELETE", fmt.Sprintf("/api/tasks/%d", task.ID), testViewerToken, "")
		require.Equal(t, http.StatusForbidden, r.status, "%s", r.body)
		r = e.call("DELETE", fmt.Sprintf("/api/tasks/%d", task.ID), "ann:"+testOperatorToken, "")
		require.Equal(t, http.StatusNoContent, r.status, "%s", r.body)
		r = e.call("GET", fmt.Sprintf("/api/tasks/%d", task.ID), testViewerToken, "")
		require.Equal(t, http.StatusNotFound, r.status, "%s", r.body)
		recs, err := e.store.TaskAttempts(e.ctx, task.ID)
		require.NoError(t, err)
		require.Empty(t, recs, "its log rows are gone")
		require.Contains(t, e.auditRows(), fmt.Sprintf("operator:ann delete task %d succeeded", task.ID))
	})
}

// GET /api/tasks?text= searches the bodies; a bulk cancel by a filter with a
// text cancels the matching tasks only.
func TestAPISearchAndBulkByText(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newAPIEnv(t, apiOpts{dialect: d, tokens: true})
		e.runBulks(t)
		var tasks []string
		for i := range 20 {
			body := fmt.Sprintf("SELECT %d", i)
			if i%4 == 0 {
				body = fmt.Sprintf("EXEC dbo.rebuild_index %d", i)
			}
			tasks = append(tasks, fmt.Sprintf(`{"body":%q,"queue":"txt"}`, body))
		}
		r := e.call("POST", "/api/tasks/batch", testOperatorToken, `{"tasks":[`+strings.Join(tasks, ",")+`]}`)
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)

		var page api.TaskPage
		r = e.call("GET", "/api/tasks?text=rebuild_index&limit=3", testViewerToken, "")
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		r.json(t, &page)
		require.Len(t, page.Tasks, 3)
		require.Equal(t, "EXEC dbo.rebuild_index 16", page.Tasks[0].Body)
		require.NotNil(t, page.NextCursor)
		r = e.call("GET", fmt.Sprintf("/api/tasks?text=rebuild_index&limit=3&cursor=%d", *page.NextCursor), testViewerToken, "")
		r.json(t, &page)
		require.Len(t, page.Tasks, 2)
		require.Nil(t, page.NextCursor, "the search reached the oldest task")
		var count api.TaskCount
		r = e.call("GET", "/api/tasks/count?text=REBUILD_index&queue=txt", testViewerToken, "")
		r.json(t, &count)
		if d != testenv.SQLServer {
			require.Equal(t, int64(5), count.Count, "ASCII case is ignored")
		}
		r = e.call("GET", "/api/tasks?text="+strings.Repeat("x", 201), testViewerToken, "")
		require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)

		r = e.call("POST", "/api/tasks/cancel", testOperatorToken, `{"filter":{"queue":"txt","text":"rebuild_index"}}`)
		require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
		var b api.Bulk
		r.json(t, &b)
		require.Equal(t, int64(5), b.Matched)
		b = e.waitBulk(b.ID)
		require.Equal(t, [2]int64{5, 0}, [2]int64{b.Done, b.Skipped})
		r = e.call("GET", "/api/tasks/count?queue=txt&state=pending", testViewerToken, "")
		r.json(t, &count)
		require.Equal(t, int64(15), count.Count, "the other bodies are left alone")
	})
}

// A task's name through the API: stored, answered, searched, refused past
// 200 characters; requeue keeps it.
func TestAPITaskName(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newAPIEnv(t, apiOpts{dialect: d, tokens: true})
		task := e.enqueue(testOperatorToken, `{"body":"EXEC etl.LoadOrders","queue":"nm","name":"Load orders (nightly)"}`)
		require.Equal(t, "Load orders (nightly)", *task.Name)
		plain := e.enqueue(testOperatorToken, `{"body":"SELECT 1","queue":"nm"}`)
		require.Nil(t, plain.Name)
		var page api.TaskPage
		r := e.call("GET", "/api/tasks?queue=nm&text=orders%20(nightly)", testViewerToken, "")
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		r.json(t, &page)
		require.Len(t, page.Tasks, 1)
		require.Equal(t, task.ID, page.Tasks[0].ID)
		r = e.call("POST", "/api/tasks", testOperatorToken, fmt.Sprintf(`{"body":"SELECT 1","name":%q}`, strings.Repeat("n", 201)))
		require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
		var eb api.ErrorBody
		r.json(t, &eb)
		require.Equal(t, "name", eb.Field)
		r = e.call("POST", "/api/tasks", testOperatorToken, `{"body":"SELECT 1","name":""}`)
		require.Equal(t, http.StatusBadRequest, r.status, "an empty name is left out: %s", r.body)
	})
}
