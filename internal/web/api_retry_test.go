package web

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"readpast/internal/testenv"
	"readpast/internal/web/api"
)

// A queue's and a task's retry policy through the API: set, read back,
// cleared with null; one out of range is refused naming its field.
func TestAPIRetryPolicy(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newAPIEnv(t, apiOpts{tokens: true, dialect: d})
		op := "alice:" + testOperatorToken
		var q api.Queue
		r := e.call("POST", "/api/queues", op, `{"name": "etl"}`)
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
		r = e.call("PATCH", "/api/queues/etl", op, `{"retry": {"interval_seconds": 30, "cap_seconds": 600}}`)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		r.json(t, &q)
		require.NotNil(t, q.Retry)
		require.InDelta(t, 30, q.Retry.IntervalSeconds, 0.001)
		require.InDelta(t, 600, *q.Retry.CapSeconds, 0.001)
		r = e.call("PATCH", "/api/queues/etl", op, `{"retry": {"interval_seconds": 600, "cap_seconds": 30}}`)
		require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
		require.Contains(t, string(r.body), "retry_cap")
		r = e.call("PATCH", "/api/queues/etl", op, `{"retry": null}`)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		r.json(t, &q)
		require.Nil(t, q.Retry)
		require.Contains(t, string(r.body), `"retry":null`)

		r = e.call("POST", "/api/tasks", op, `{"queue": "etl", "body": "SELECT 1", "retry": {"interval_seconds": 5}}`)
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
		r = e.call("POST", "/api/tasks", op, `{"queue": "etl", "body": "SELECT 1", "retry": {"interval_seconds": 0}}`)
		require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
		require.Contains(t, string(r.body), "retry_interval")
	})
}
