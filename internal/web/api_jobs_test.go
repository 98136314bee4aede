package web

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/testenv"
	"readpast/internal/web/api"
)

// nightlyMaint is the job, its bodies made to run on any store: the
// check fails (no such table), so the run takes the failure branch to notify,
// which quits reporting failure.
const nightlyMaint = `{"name": "nightly-maint", "description": "checks, rebuilds, tells", "category": "maintenance",
 "queue": "maint",
 "steps": [
   {"name": "check",   "body": "SELECT * FROM no_such_table_here", "on_success": "next", "on_failure": "step:notify"},
   {"name": "rebuild", "body": "SELECT 2", "retry_attempts": 2, "retry_interval": "5m",
    "on_success": "quit_success", "on_failure": "step:notify"},
   {"name": "notify",  "body": "SELECT 3", "on_success": "quit_failure", "on_failure": "quit_failure"}],
 "schedules": [{"cron": "0 1 * * *", "time_zone": "Europe/Paris"}]}`

// The jobs API on every dialect, with a real worker node: create the issue's
// job, read it, run it and watch it follow its failure branch, run it from a
// step, page its runs, cancel a run, change and delete it; every change
// audited as its actor's, the viewer refused changes.
func TestAPIJobs(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newAPIEnv(t, apiOpts{tokens: true, node: true, dialect: d})
		op, viewer := "alice:"+testOperatorToken, testViewerToken

		r := e.call("POST", "/api/jobs", op, nightlyMaint)
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
		require.Equal(t, "/api/jobs/nightly-maint", r.header.Get("Location"))
		var j api.JobJSON
		r.json(t, &j)
		require.Equal(t, "operator:alice", j.Owner)
		require.Equal(t, "maintenance", j.Category)
		require.True(t, j.Enabled)
		require.Len(t, j.Steps, 3)
		require.Equal(t, "step:notify", j.Steps[0].OnFailure)
		require.Empty(t, j.Warnings)
		require.Nil(t, j.LastRun)
		r = e.call("POST", "/api/jobs", op, nightlyMaint)
		require.Equal(t, http.StatusConflict, r.status, "a taken name: %s", r.body)
		r = e.call("POST", "/api/jobs", viewer, nightlyMaint)
		require.Equal(t, http.StatusForbidden, r.status)

		// Bad flows are refused with the field at fault.
		r = e.call("POST", "/api/jobs", op, `{"name": "bad", "steps": [{"name": "a", "body": "SELECT 1", "on_failure": "step:nope"}]}`)
		require.Equal(t, http.StatusBadRequest, r.status)
		require.Contains(t, string(r.body), "steps[0].on_failure")
		require.Contains(t, string(r.body), "nope")
		r = e.call("POST", "/api/jobs", op, `{"name": "bad", "steps": []}`)
		require.Equal(t, http.StatusBadRequest, r.status)
		r = e.call("POST", "/api/jobs", op, `{"name": "bad", "steps": [{"name": "a", "body": "SELECT 1", "on_succes": "next"}]}`)
		require.Equal(t, http.StatusBadRequest, r.status, "a misspelt field: %s", r.body)
		// An unreachable step is allowed, with a warning.
		r = e.call("POST", "/api/jobs", op, `{"name": "warned", "steps": [
			{"name": "a", "body": "SELECT 1", "on_success": "quit_success"}, {"name": "b", "body": "SELECT 2"}]}`)
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
		r.json(t, &j)
		require.Len(t, j.Warnings, 1)
		require.Contains(t, j.Warnings[0], "step b is unreachable")

		// The schedule the job has.
		var s api.Schedule
		r = e.call("GET", "/api/schedules/nightly-maint:1", viewer, "")
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		r.json(t, &s)
		require.Equal(t, "Europe/Paris", s.TimeZone)

		// Run now: the node runs check (fails), then notify, and the run
		// ends failed.
		r = e.call("POST", "/api/jobs/nightly-maint/run", op, "")
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
		var started struct {
			RunID int64 `json:"run_id"`
		}
		r.json(t, &started)
		require.NotZero(t, started.RunID)
		run := e.waitRun(t, started.RunID, viewer)
		require.Equal(t, "failed", run.State, "%+v", run)
		require.Len(t, run.Steps, 2)
		require.Equal(t, "check", run.Steps[0].Step)
		require.Equal(t, "failed", run.Steps[0].Outcome)
		require.NotZero(t, run.Steps[0].TaskID)
		// Why it failed: the missing table, or (a server too slow for the
		// test's 2 s lease) its lost lease; either way an attempt that failed.
		require.NotEmpty(t, run.Steps[0].Error)
		require.Equal(t, "notify", run.Steps[1].Step)
		require.Equal(t, "succeeded", run.Steps[1].Outcome)
		require.Contains(t, run.Reason, "quit reporting failure")

		// Run from a step.
		r = e.call("POST", "/api/jobs/nightly-maint/run", op, `{"from_step": "rebuild"}`)
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
		r.json(t, &started)
		run = e.waitRun(t, started.RunID, viewer)
		require.Equal(t, "succeeded", run.State)
		require.Equal(t, "from_step", run.Trigger)
		r = e.call("POST", "/api/jobs/nightly-maint/run", op, `{"from_step": "nope"}`)
		require.Equal(t, http.StatusBadRequest, r.status)
		r = e.call("POST", "/api/jobs/no-such-job/run", op, "")
		require.Equal(t, http.StatusNotFound, r.status)

		// Runs, newest first, in keyset pages.
		var page api.RunPage
		r = e.call("GET", "/api/jobs/nightly-maint/runs?limit=1", viewer, "")
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		r.json(t, &page)
		require.Len(t, page.Runs, 1)
		require.Equal(t, started.RunID, page.Runs[0].ID)
		require.NotNil(t, page.NextCursor)
		r = e.call("GET", fmt.Sprintf("/api/jobs/nightly-maint/runs?cursor=%d", *page.NextCursor), viewer, "")
		r.json(t, &page)
		require.Len(t, page.Runs, 1)
		require.Equal(t, "failed", page.Runs[0].State)
		require.Nil(t, page.NextCursor)

		// Cancel: an ended run cannot be; a missing one is 404.
		r = e.call("POST", fmt.Sprintf("/api/runs/%d/cancel", started.RunID), op, "")
		require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
		r = e.call("POST", "/api/runs/999999/cancel", op, "")
		require.Equal(t, http.StatusNotFound, r.status)

		// The list, a change, a delete.
		var list struct{ Jobs []api.JobSummary }
		e.call("GET", "/api/jobs", viewer, "").json(t, &list)
		require.Len(t, list.Jobs, 2)
		require.Equal(t, "nightly-maint", list.Jobs[0].Name)
		require.Equal(t, "succeeded", list.Jobs[0].LastRun.State)
		r = e.call("PATCH", "/api/jobs/nightly-maint", op, `{"enabled": false, "description": "paused for the upgrade"}`)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		r.json(t, &j)
		require.False(t, j.Enabled)
		require.Equal(t, "paused for the upgrade", j.Description)
		require.Len(t, j.Steps, 3, "steps left out stay")
		e.call("GET", "/api/schedules/nightly-maint:1", viewer, "").json(t, &s)
		require.True(t, s.Paused, "a disabled job's schedules are paused")
		r = e.call("DELETE", "/api/jobs/nightly-maint", op, "")
		require.Equal(t, http.StatusNoContent, r.status, "%s", r.body)
		require.Equal(t, http.StatusNotFound, e.call("GET", "/api/jobs/nightly-maint", viewer, "").status)
		require.Equal(t, http.StatusOK, e.call("GET", fmt.Sprintf("/api/runs/%d", started.RunID), viewer, "").status,
			"runs stay in the history")

		audit := string(e.call("GET", "/api/audit", viewer, "").body)
		for _, a := range []string{"create_job", "run_job", "update_job", "delete_job"} {
			require.True(t, strings.Contains(audit, `"action":"`+a+`"`), "audited: %s", a)
		}
	})
}

// waitRun polls GET /api/runs/{id} until the run has ended.
func (e *apiEnv) waitRun(t *testing.T, id int64, token string) api.RunJSON {
	t.Helper()
	var run api.RunJSON
	for end := time.Now().Add(90 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		r := e.call("GET", fmt.Sprintf("/api/runs/%d", id), token, "")
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		r.json(t, &run)
		if run.State != "running" {
			return run
		}
	}
	t.Fatalf("run %d is still running: %+v", id, run)
	return run
}
