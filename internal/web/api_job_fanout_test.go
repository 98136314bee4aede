package web

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/testenv"
	"readpast/internal/web/api"
)

// A job step that fans out, through the API: created with targets and a
// limit and read back; a run makes one task per target of the live node (the
// test's node serves one, default: the conformance suite's job_fanout group
// proves the multi-target semantics on every dialect), the next step follows
// once it has ended, and the run's page lists the step's task with its
// target; what a fan-out refuses answers 400 naming the step's field.
func TestAPIJobStepFanOut(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t, apiOpts{dialect: testenv.SQLite, tokens: true, node: true, lease: time.Minute})
	op, viewer := "alice:"+testOperatorToken, testViewerToken
	r := e.call("POST", "/api/jobs", op, `{"name": "every-server", "queue": "fan", "steps": [
		{"name": "check", "body": "SELECT 1", "targets": ["default"], "fanout_limit": 1},
		{"name": "report", "body": "SELECT 2"}]}`)
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	var j api.JobJSON
	r.json(t, &j)
	require.Equal(t, []string{"default"}, j.Steps[0].Targets)
	require.Equal(t, 1, j.Steps[0].FanOutLimit)
	r = e.call("GET", "/api/jobs/every-server", viewer, "")
	require.Contains(t, string(r.body), `"targets":["default"]`)
	require.Contains(t, string(r.body), `"fanout_limit":1`)

	r = e.call("POST", "/api/jobs/every-server/run", op, "")
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	var started struct {
		RunID int64 `json:"run_id"`
	}
	r.json(t, &started)
	run := e.waitRun(t, started.RunID, viewer)
	require.Equal(t, "succeeded", run.State, "%+v", run)
	require.Len(t, run.Steps, 2, "check on its target, then report once")
	require.Equal(t, "check", run.Steps[0].Step)
	require.Equal(t, "default", run.Steps[0].Target)
	require.Equal(t, "report", run.Steps[1].Step)
	require.Empty(t, run.Steps[1].Target)

	page := e.call("GET", "/runs/"+strconv.FormatInt(started.RunID, 10), viewer, "")
	require.Equal(t, http.StatusOK, page.status)
	require.Contains(t, string(page.body), `<td class="target">default</td>`)

	for _, c := range []struct{ step, field string }{
		{`{"name": "a", "body": "SELECT 1", "targets": ["default"], "target": "default"}`, "steps[0].target"},
		{`{"name": "a", "body": "SELECT 1", "fanout_limit": 2}`, "steps[0].fanout_limit"},
		{`{"name": "a", "body": "SELECT 1", "targets": ["tag:"]}`, "steps[0].targets"},
		{`{"name": "a", "body": "SELECT 1", "targets": ["default"], "transactional": true}`, "steps[0].transactional"},
	} {
		r := e.call("POST", "/api/jobs", op, `{"name": "bad", "steps": [`+c.step+`]}`)
		require.Equal(t, http.StatusBadRequest, r.status, "%s: %s", c.step, r.body)
		var b api.ErrorBody
		r.json(t, &b)
		require.Equal(t, c.field, b.Field, "%s", r.body)
	}
}
