package web

import (
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

// Cancelling a running task stops its statement at once on this node, and the
// audit log records the named principal; retry runs it again.
func TestAPICancelRunningAndRetry(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		// A 60 s lease heartbeats every 20 s: a cancel seen within 10 s was
		// delivered by the API to the node directly, not found at a heartbeat.
		e := newAPIEnv(t, apiOpts{dialect: d, tokens: true, node: true, lease: time.Minute})
		alice := "alice:" + testOperatorToken

		task := e.enqueue(alice, fmt.Sprintf(`{"body":%q,"max_attempts":1}`, testenv.SleepBody(t, d, 10*time.Minute)))
		require.Equal(t, "operator:alice", *task.CreatedBy)
		e.waitState(task.ID, queue.StateRunning, 20*time.Second)

		start := time.Now()
		r := e.call("POST", fmt.Sprintf("/api/tasks/%d/cancel", task.ID), alice, "")
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		e.waitState(task.ID, queue.StateCancelled, 10*time.Second)
		t.Logf("cancelled %s after the request", time.Since(start))

		recs, err := e.store.TaskAttempts(e.ctx, task.ID)
		require.NoError(t, err)
		require.Len(t, recs, 1)
		require.Equal(t, queue.OutcomeCancelled, recs[0].Outcome)
		require.Contains(t, e.auditRows(), fmt.Sprintf("operator:alice cancel task %d running", task.ID),
			"the audit log must name who cancelled")

		// Cancelling it again is a conflict; retrying it is not.
		r = e.call("POST", fmt.Sprintf("/api/tasks/%d/cancel", task.ID), alice, "")
		require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
		r = e.call("POST", fmt.Sprintf("/api/tasks/%d/retry", task.ID), testOperatorToken, "")
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		e.waitState(task.ID, queue.StateRunning, 20*time.Second)
		require.Contains(t, e.auditRows(), fmt.Sprintf("operator retry task %d", task.ID))
		r = e.call("POST", fmt.Sprintf("/api/tasks/%d/cancel", task.ID), testOperatorToken, "")
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		e.waitState(task.ID, queue.StateCancelled, 10*time.Second)

		// A pending task is cancelled at once, by the store alone.
		pending := e.enqueue(testOperatorToken, `{"body":"SELECT 1","delay_seconds":600}`)
		r = e.call("POST", fmt.Sprintf("/api/tasks/%d/cancel", pending.ID), testOperatorToken, "")
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		var after api.Task
		r.json(t, &after)
		require.Equal(t, "cancelled", after.State)
		require.NotNil(t, after.LastError)
	})
}

// Queue settings, group limits and nodes through the API; each change is audited.
func TestAPIQueuesGroupsNodes(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newAPIEnv(t, apiOpts{dialect: d, tokens: true, node: true})
		op := "bob:" + testOperatorToken
		e.enqueue(op, `{"body":"SELECT 1","queue":"reports","group":"gl"}`)

		r := e.call("PATCH", "/api/queues/reports", op, `{"workers":2,"max_running":3,"paused":true}`)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		var q api.Queue
		r.json(t, &q)
		require.Equal(t, 2, *q.Workers)
		require.Equal(t, 3, *q.MaxRunning)
		require.True(t, q.Paused)
		require.Equal(t, "operator:bob", *q.UpdatedBy)

		r = e.call("PATCH", "/api/queues/reports", op, `{"max_running":null,"paused":false}`)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		r.json(t, &q)
		require.Nil(t, q.MaxRunning, "null clears the limit")
		require.Equal(t, 2, *q.Workers, "absent fields stay")
		require.False(t, q.Paused)

		r = e.call("GET", "/api/queues", testViewerToken, "")
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		var qs struct{ Queues []api.Queue }
		r.json(t, &qs)
		require.NotEmpty(t, qs.Queues)
		found := false
		for _, q := range qs.Queues {
			if q.Name == "reports" {
				found = true
				require.Contains(t, q.Counts, "pending")
				require.Contains(t, q.Counts, "cancelled", "every state is listed, zeros included")
			}
		}
		require.True(t, found, "%s", r.body)

		r = e.call("PUT", "/api/groups/gl", op, `{"max_running":4}`)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		var g api.Group
		r.json(t, &g)
		require.Equal(t, 4, g.MaxRunning)
		r = e.call("GET", "/api/groups", testViewerToken, "")
		require.Contains(t, string(r.body), `"name":"gl"`)

		audit := e.auditRows()
		require.Contains(t, audit, "operator:bob update_queue queue reports workers=2 max_running=3 paused=true")
		require.Contains(t, audit, "operator:bob update_queue queue reports max_running=none paused=false")
		require.Contains(t, audit, "operator:bob set_group_limit group gl 4")

		require.Eventually(t, func() bool {
			r := e.call("GET", "/api/nodes", testViewerToken, "")
			var ns struct {
				Nodes []struct {
					ID   string
					Gone bool
					Self bool
					Info struct {
						Pools []struct{ Queue string }
					}
				}
			}
			r.json(t, &ns)
			for _, n := range ns.Nodes {
				if n.ID == "api-test-node" && n.Self && !n.Gone && len(n.Info.Pools) > 0 {
					return true
				}
			}
			return false
		}, 20*time.Second, 50*time.Millisecond, "the node must be listed, alive, with its pools decoded")
	})
}

// Logs: a page with a cursor, and the whole log streamed as NDJSON and JSON.
func TestAPILogs(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newAPIEnv(t, apiOpts{dialect: d, node: true})
		var ids []int64
		for i := range 3 {
			ids = append(ids, e.enqueue("", fmt.Sprintf(`{"body":"SELECT %d","queue":"lq"}`, i)).ID)
		}
		bad := e.enqueue("", `{"body":"SELECT * FROM no_such_table","queue":"lq","max_attempts":1}`)
		for _, id := range ids {
			e.waitState(id, queue.StateSucceeded, 20*time.Second)
		}
		e.waitState(bad.ID, queue.StateFailed, 20*time.Second)

		r := e.call("GET", "/api/logs?queue=lq&limit=3", "", "")
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		var p struct {
			Logs       []map[string]any
			NextCursor *int64 `json:"next_cursor"`
		}
		r.json(t, &p)
		require.Len(t, p.Logs, 3)
		require.NotNil(t, p.NextCursor)
		r = e.call("GET", fmt.Sprintf("/api/logs?queue=lq&limit=3&cursor=%d", *p.NextCursor), "", "")
		r.json(t, &p)
		require.Len(t, p.Logs, 1)
		require.Nil(t, p.NextCursor)

		r = e.call("GET", "/api/logs?outcome=failed", "", "")
		r.json(t, &p)
		require.Len(t, p.Logs, 1)
		require.Equal(t, float64(bad.ID), p.Logs[0]["task_id"])
		require.Contains(t, p.Logs[0]["error"], "no_such_table")

		r = e.call("GET", "/api/logs?format=ndjson&since=1h", "", "")
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		require.Equal(t, "application/x-ndjson", r.header.Get("Content-Type"))
		require.Contains(t, r.header.Get("Content-Disposition"), "attachment")
		require.Len(t, splitLines(string(r.body)), 4)
		r = e.call("GET", fmt.Sprintf("/api/logs?format=json&task=%d", bad.ID), "", "")
		var all []map[string]any
		r.json(t, &all)
		require.Len(t, all, 1)

		for q, field := range map[string]string{"outcome=nope": "outcome", "since=yesterday": "since", "format=csv": "format",
			"format=ndjson&limit=5": "limit", "limit=0": "limit", "tsk=1": "tsk"} {
			r := e.call("GET", "/api/logs?"+q, "", "")
			require.Equal(t, http.StatusBadRequest, r.status, "%s: %s", q, r.body)
			require.Contains(t, r.errorMsg(t), field, q)
		}
	})
}

func splitLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}
