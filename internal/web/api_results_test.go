package web

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"readpast/internal/testenv"
	"readpast/internal/web/api"
)

// result_rows is a queue setting like the others: set by PATCH and POST,
// answered with the queue, audited, and refused out of range with a sentence.
func TestAPIQueueResultRows(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newAPIEnv(t, apiOpts{dialect: d})
		r := e.call("POST", "/api/queues", "", `{"name":"reports","result_rows":20}`)
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
		var q api.Queue
		r.json(t, &q)
		require.Equal(t, 20, q.ResultRows)

		r = e.call("PATCH", "/api/queues/reports", "", `{"result_rows":100}`)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		r.json(t, &q)
		require.Equal(t, 100, q.ResultRows)
		require.Equal(t, int64(1), e.db.QueryInt(t, "SELECT count(*) FROM readpast_audit WHERE action = 'update_queue' AND detail LIKE '%result_rows=100%'"))

		r = e.call("PATCH", "/api/queues/reports", "", `{"paused":true}`)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		r.json(t, &q)
		require.Equal(t, 100, q.ResultRows, "absent, it stays")

		e.refused(t, "PATCH", "/api/queues/reports", `{"result_rows":1001}`, http.StatusBadRequest, "result_rows", "use 0 (keep no result output) to 1000")
		e.refused(t, "PATCH", "/api/queues/reports", `{"result_rows":-1}`, http.StatusBadRequest, "result_rows", "use 0")
		e.refused(t, "PATCH", "/api/queues/reports", `{"result_rows":null}`, http.StatusBadRequest, "result_rows", "cannot be null")

		r = e.call("GET", "/api/tasks/"+"1", "", "")
		require.Equal(t, http.StatusNotFound, r.status, "%s", r.body)
		task := e.enqueue("", `{"body":"SELECT 1","queue":"reports"}`)
		r = e.call("GET", "/api/tasks/"+strconv.FormatInt(task.ID, 10), "", "")
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		require.Contains(t, string(r.body), `"results":[]`, "a task with no output kept has an empty list")
	})
}
