package web

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"readpast/internal/ops"
	"readpast/internal/testenv"
	"readpast/internal/web/api"
)

// GET /api/audit: who changed what, to which object, when, newest first in
// keyset pages; the viewer role may read it; format=ndjson and format=json
// without a limit export the whole log; bad parameters are refused.
func TestAPIAudit(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newAPIEnv(t, apiOpts{dialect: d, tokens: true})
		alice := "alice:" + testOperatorToken
		task := e.enqueue(alice, `{"body":"SELECT 1","queue":"etl","delay_seconds":3600}`)
		for _, c := range []struct{ method, path, body string }{
			{"PATCH", "/api/queues/etl", `{"paused":true}`},
			{"PUT", "/api/groups/nightly", `{"max_running":2}`},
			{"POST", fmt.Sprintf("/api/tasks/%d/cancel", task.ID), ""},
			{"POST", fmt.Sprintf("/api/tasks/%d/retry", task.ID), ""},
		} {
			r := e.call(c.method, c.path, alice, c.body)
			require.Less(t, r.status, 300, "%s %s: %s", c.method, c.path, r.body)
		}

		r := e.call("GET", "/api/audit?limit=3", testViewerToken, "")
		require.Equal(t, http.StatusOK, r.status, "the viewer reads the audit log: %s", r.body)
		var first api.AuditPage
		r.json(t, &first)
		require.Len(t, first.Audit, 3)
		require.NotNil(t, first.NextCursor)
		top := first.Audit[0]
		require.Equal(t, "operator:alice", top.Actor)
		require.Equal(t, "retry", top.Action)
		require.Equal(t, fmt.Sprintf("task %d", task.ID), top.Object)
		require.Nil(t, top.Detail, "a retry says it all")
		require.Contains(t, string(r.body), `"at":"`, "when, as RFC 3339")
		require.Equal(t, "set_group_limit", first.Audit[2].Action)
		require.Equal(t, "2", *first.Audit[2].Detail)

		r = e.call("GET", fmt.Sprintf("/api/audit?limit=3&cursor=%d", *first.NextCursor), testViewerToken, "")
		require.Equal(t, http.StatusOK, r.status, r.body)
		var second api.AuditPage
		r.json(t, &second)
		require.Len(t, second.Audit, 1, "the last page")
		require.Equal(t, "update_queue", second.Audit[0].Action)
		require.Equal(t, "queue etl", second.Audit[0].Object)
		require.Nil(t, second.NextCursor, "null on the last page")

		nd := e.call("GET", "/api/audit?format=ndjson", testViewerToken, "")
		require.Equal(t, http.StatusOK, nd.status)
		require.Equal(t, "application/x-ndjson", nd.header.Get("Content-Type"))
		var lines []ops.AuditRow
		sc := bufio.NewScanner(bytes.NewReader(nd.body))
		for sc.Scan() {
			var row ops.AuditRow
			require.NoError(t, json.Unmarshal(sc.Bytes(), &row), "each line is one JSON object: %s", sc.Text())
			lines = append(lines, row)
		}
		require.Len(t, lines, 4)
		require.Equal(t, first.Audit[0], lines[0])
		all := e.call("GET", "/api/audit?format=json", testViewerToken, "")
		var arr []ops.AuditRow
		all.json(t, &arr)
		require.Equal(t, lines, arr, "the JSON export is the same rows as one array")

		require.Equal(t, http.StatusUnauthorized, e.call("GET", "/api/audit", "", "").status)
		for _, bad := range []struct{ query, field string }{
			{"limit=0", "limit"}, {"limit=1001", "limit"}, {"cursor=-1", "cursor"}, {"format=xml", "format"},
			{"format=ndjson&limit=5", "limit"}, {"actor=alice", "actor"},
		} {
			r := e.call("GET", "/api/audit?"+bad.query, testViewerToken, "")
			require.Equal(t, http.StatusBadRequest, r.status, "%s: %s", bad.query, r.body)
			var b api.ErrorBody
			r.json(t, &b)
			require.Equal(t, bad.field, b.Field, "%s: %s", bad.query, r.body)
		}
	})
}
