package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/testenv"
	"readpast/internal/web/api"
)

// Unique keys through the API: a second enqueue while the first task is
// unfinished answers 200 with that task and "duplicate": true, and creates
// nothing; in a batch each task says whether it was one; once the task has
// finished the key is free. On every dialect.
func TestAPIUniqueKeys(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newAPIEnv(t, apiOpts{dialect: d})
		post := func(body string) (apiRes, api.Enqueued) {
			r := e.call("POST", "/api/tasks", "", body)
			var out api.Enqueued
			r.json(t, &out)
			return r, out
		}
		r, first := post(`{"body":"EXEC dbo.nightly_load","queue":"etl","unique_key":"load-2026-01-02","delay_seconds":600}`)
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
		require.False(t, first.Duplicate)
		require.Equal(t, "load-2026-01-02", *first.UniqueKey)
		require.Equal(t, fmt.Sprintf("/api/tasks/%d", first.ID), r.header.Get("Location"))

		r, dup := post(`{"body":"EXEC dbo.other","queue":"etl","unique_key":"load-2026-01-02"}`)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		require.True(t, dup.Duplicate)
		require.Equal(t, first.ID, dup.ID, "the existing task")
		require.Equal(t, "EXEC dbo.nightly_load", dup.Body, "as it is, unchanged")
		require.Empty(t, r.header.Get("Location"), "nothing was created")
		require.Contains(t, string(r.body), `"duplicate":true`)

		r, other := post(`{"body":"SELECT 1","queue":"reports","unique_key":"load-2026-01-02","delay_seconds":600}`)
		require.Equal(t, http.StatusCreated, r.status, "keys are per queue: %s", r.body)
		require.NotEqual(t, first.ID, other.ID)

		r = e.call("POST", "/api/tasks/batch", "", `{"tasks":[
				{"body":"SELECT 1","queue":"etl","unique_key":"load-2026-01-02"},
				{"body":"SELECT 2","queue":"etl","unique_key":"load-2026-01-03","delay_seconds":600},
				{"body":"SELECT 3","queue":"etl","unique_key":"load-2026-01-03"}]}`)
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
		var batch api.BatchAnswer
		r.json(t, &batch)
		require.Equal(t, []bool{true, false, true}, batch.Duplicate)
		require.Equal(t, first.ID, batch.IDs[0])
		require.Equal(t, batch.IDs[1], batch.IDs[2], "a key holds within one batch")
		r = e.call("POST", "/api/tasks/batch", "", `{"tasks":[{"body":"SELECT 1","queue":"etl","unique_key":"load-2026-01-02"}]}`)
		require.Equal(t, http.StatusOK, r.status, "a batch that created nothing: %s", r.body)
		require.Equal(t, 3, e.taskCount(), "duplicates created nothing")

		_, err := e.store.Cancel(e.ctx, first.ID, "test")
		require.NoError(t, err)
		r, fresh := post(`{"body":"EXEC dbo.nightly_load","queue":"etl","unique_key":"load-2026-01-02"}`)
		require.Equal(t, http.StatusCreated, r.status, "a finished task holds no key: %s", r.body)
		require.NotEqual(t, first.ID, fresh.ID)

		r = e.call("POST", "/api/tasks", "", `{"body":"SELECT 1","unique_key":"k\u0000"}`)
		require.Equal(t, http.StatusBadRequest, r.status)
		require.Contains(t, r.errorMsg(t), "unique_key")
		r = e.call("POST", "/api/tasks", "", `{"body":"SELECT 1","unique_key":"`+strings.Repeat("k", 129)+`"}`)
		require.Equal(t, http.StatusBadRequest, r.status)
		require.Contains(t, r.errorMsg(t), "unique_key")
	})
}

// The enqueue form takes a unique key; enqueued again while the first task is
// unfinished, it says so and leads to that task, creating nothing.
func TestEnqueueFormUniqueKey(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newUIEnv(t, uiOpts{dialect: d})
		form := url.Values{"queue": {"etl"}, "body": {"EXEC dbo.nightly_load"}, "delay": {"10m"}, "unique_key": {"load-2026-01-02"}}
		p := e.post("/tasks/new", form)
		require.Equal(t, http.StatusSeeOther, p.status, p.body)
		var id int64
		_, err := fmt.Sscanf(p.location, "/tasks/%d", &id)
		require.NoError(t, err, p.location)
		task := e.get(p.location)
		require.Contains(t, task.body, fmt.Sprintf("Task %d enqueued", id))
		require.Contains(t, task.body, "load-2026-01-02", "the task page shows its key")

		again := e.post("/tasks/new", form)
		require.Equal(t, http.StatusSeeOther, again.status, again.body)
		require.Equal(t, p.location, again.location, "the form leads to the unfinished task")
		require.Contains(t, e.get(again.location).body,
			fmt.Sprintf("Already enqueued: task %d is unfinished with that key", id))
		all, err := e.store.List(e.ctx, queue.ListParams{})
		require.NoError(t, err)
		require.Len(t, all, 1, "nothing new was created")

		bad := e.post("/tasks/new", url.Values{"body": {"SELECT 1"}, "unique_key": {"k\x01"}})
		require.Equal(t, http.StatusUnprocessableEntity, bad.status)
		i := strings.Index(bad.body, `class="field-error"`)
		require.Greater(t, i, 0)
		require.Contains(t, bad.body[:i], `name="unique_key"`, "the message follows the unique key field")
	})
}
