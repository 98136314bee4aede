package web

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/logs"
	"readpast/internal/queue"
	"readpast/internal/testenv"
	"readpast/internal/web/api"
)

// A task enqueued through the API runs on the node at once and reads back with
// its attempts; lists filter and page by keyset.
func TestAPITaskLifecycle(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newAPIEnv(t, apiOpts{dialect: d, tokens: true, node: true})
		op := testOperatorToken

		created := e.enqueue(op, `{"body":"CREATE TABLE api_t (n int)","queue":"etl","priority":5,"max_attempts":2,"timeout_seconds":30}`)
		require.Equal(t, "etl", created.Queue)
		require.Equal(t, 5, created.Priority)
		require.Equal(t, 2, created.MaxAttempts)
		require.Equal(t, "operator", *created.CreatedBy, "created_by is the authenticated principal")
		require.NotNil(t, created.TimeoutSeconds)
		require.InDelta(t, 30, *created.TimeoutSeconds, 0.001)
		e.waitState(created.ID, queue.StateSucceeded, 20*time.Second)

		r := e.call("GET", fmt.Sprintf("/api/tasks/%d", created.ID), testViewerToken, "")
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		var got struct {
			api.Task
			Why *string    `json:"why"`
			Log []logs.Row `json:"log"`
		}
		r.json(t, &got)
		require.Equal(t, "succeeded", got.State)
		require.Equal(t, 1, got.Attempts)
		require.NotNil(t, got.StartedAt)
		require.NotNil(t, got.FinishedAt)
		require.Nil(t, got.Why)
		require.Len(t, got.Log, 1)
		require.Equal(t, "succeeded", got.Log[0].Outcome)
		require.Equal(t, "api-test-node", *got.Log[0].Node)
		for _, field := range []string{`"task_id"`, `"session_id"`, `"duration_ms"`, `"rows_affected"`, `"last_error"`, `"created_at"`} {
			require.Contains(t, string(r.body), field)
		}

		// A delayed task waits and says why.
		delayed := e.enqueue(op, `{"body":"SELECT 1","queue":"later","delay_seconds":3600,"group":"g1"}`)
		r = e.call("GET", fmt.Sprintf("/api/tasks/%d", delayed.ID), op, "")
		r.json(t, &got)
		require.Equal(t, "pending", got.State)
		require.NotNil(t, got.Why)
		require.Contains(t, *got.Why, "delayed until")
		require.Equal(t, "g1", *got.Group)
		at := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
		abs := e.enqueue(op, fmt.Sprintf(`{"body":"SELECT 2","queue":"later","available_at":%q}`, at.Format(time.RFC3339)))
		require.True(t, abs.AvailableAt.Equal(at), "available_at %s, want %s", abs.AvailableAt, at)

		// Keyset pages: newest first, next_cursor is the last id, null at the end.
		for i := range 5 {
			e.enqueue(op, fmt.Sprintf(`{"body":"SELECT %d","queue":"paged"}`, i))
		}
		var seen []int64
		cursor := ""
		for pages := 0; ; pages++ {
			require.Less(t, pages, 5, "paging must end")
			r = e.call("GET", "/api/tasks?queue=paged&limit=2"+cursor, testViewerToken, "")
			require.Equal(t, http.StatusOK, r.status, "%s", r.body)
			var p api.TaskPage
			r.json(t, &p)
			for _, task := range p.Tasks {
				require.Equal(t, "paged", task.Queue)
				seen = append(seen, task.ID)
			}
			if p.NextCursor == nil {
				break
			}
			cursor = fmt.Sprintf("&cursor=%d", *p.NextCursor)
		}
		require.Len(t, seen, 5)
		for i := 1; i < len(seen); i++ {
			require.Less(t, seen[i], seen[i-1], "newest first")
		}
		r = e.call("GET", "/api/tasks?queue=paged&limit=5", op, "")
		var exact api.TaskPage
		r.json(t, &exact)
		require.Len(t, exact.Tasks, 5)
		require.Nil(t, exact.NextCursor, "a page that ends the list says so")
		r = e.call("GET", "/api/tasks?state=succeeded&queue=etl", op, "")
		var p api.TaskPage
		r.json(t, &p)
		require.Len(t, p.Tasks, 1)
		require.Equal(t, created.ID, p.Tasks[0].ID)
		r = e.call("GET", "/api/tasks?group=g1", op, "")
		r.json(t, &p)
		require.Len(t, p.Tasks, 1)
		require.Nil(t, p.NextCursor)
	})
}

// A chain batch numbers stages by position × 10 unless a task gives one; an
// independent batch keeps each task's own settings; a bad task names itself
// and nothing is written.
func TestAPIBatches(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newAPIEnv(t, apiOpts{dialect: d})
		r := e.call("POST", "/api/tasks/batch", "", `{"chain":"nightly","continue_on_failure":true,"tasks":[
		{"body":"SELECT 1"},{"body":"SELECT 2"},{"body":"SELECT 3","stage":10},{"body":"SELECT 4"}]}`)
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
		var b struct{ IDs []int64 }
		r.json(t, &b)
		require.Len(t, b.IDs, 4)
		wantStages := []int{0, 10, 10, 30}
		for i, id := range b.IDs {
			task, err := e.store.Get(e.ctx, id)
			require.NoError(t, err)
			require.Equal(t, "nightly", task.Chain)
			require.Equal(t, wantStages[i], task.Stage, "task %d", i)
			require.True(t, task.ContinueOnFailure)
			require.Equal(t, "local", task.CreatedBy, "local mode records the actor local")
		}

		r = e.call("POST", "/api/tasks/batch", "", `{"tasks":[{"body":"SELECT 1","queue":"a"},{"body":"SELECT 2","queue":"b","chain":"c2","stage":5}]}`)
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
		r.json(t, &b)
		second, err := e.store.Get(e.ctx, b.IDs[1])
		require.NoError(t, err)
		require.Equal(t, "b", second.Queue)
		require.Equal(t, 5, second.Stage)

		before, err := e.store.List(e.ctx, queue.ListParams{Limit: 1000})
		require.NoError(t, err)
		for _, c := range []struct{ body, field string }{
			{`{"chain":"x","tasks":[{"body":"SELECT 1"},{"body":"  "}]}`, "tasks[1].body"},
			{`{"chain":"x","tasks":[{"body":"SELECT 1","chain":"other"}]}`, "tasks[0].chain"},
			{`{"tasks":[{"body":"SELECT 1","priority":-1}]}`, "tasks[0].priority"},
			{`{"tasks":[]}`, "tasks"},
			{`{"chain":"","tasks":[{"body":"SELECT 1"}]}`, "chain"},
			{`{"continue_on_failure":true,"tasks":[{"body":"SELECT 1"}]}`, "continue_on_failure"},
			{`{"tasks":[{"body":"SELECT 1","delay_seconds":-5}]}`, "tasks[0].delay_seconds"},
		} {
			r := e.call("POST", "/api/tasks/batch", "", c.body)
			require.Equal(t, http.StatusBadRequest, r.status, "%s: %s", c.body, r.body)
			require.Contains(t, r.errorMsg(t), c.field)
		}
		after, err := e.store.List(e.ctx, queue.ListParams{Limit: 1000})
		require.NoError(t, err)
		require.Len(t, after, len(before), "a refused batch writes nothing")
	})
}

// Bodies come back JSON-escaped: "<script>" cannot become markup anywhere the
// JSON is shown, and the response is never sniffed as HTML.
func TestAPIEscapesScriptBody(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newAPIEnv(t, apiOpts{dialect: d})
		evil := `<script>alert(1)</script>`
		created := e.enqueue("", fmt.Sprintf(`{"body":"SELECT '%s'"}`, evil))
		for _, path := range []string{fmt.Sprintf("/api/tasks/%d", created.ID), "/api/tasks"} {
			r := e.call("GET", path, "", "")
			require.Equal(t, http.StatusOK, r.status)
			require.NotContains(t, string(r.body), "<script>", path)
			require.Contains(t, string(r.body), `\u003cscript\u003ealert(1)\u003c/script\u003e`, path)
			require.Equal(t, "application/json", r.header.Get("Content-Type"))
			require.Equal(t, "nosniff", r.header.Get("X-Content-Type-Options"))
		}
		var back api.Task
		e.call("GET", fmt.Sprintf("/api/tasks/%d", created.ID), "", "").json(t, &back)
		require.Equal(t, "SELECT '"+evil+"'", back.Body, "escaping is only the JSON encoding")
		require.True(t, strings.HasPrefix(back.Body, "SELECT"))
	})
}
