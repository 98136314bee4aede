package web

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/schedule"
	"readpast/internal/testenv"
	"readpast/internal/web/api"
)

// nightly is the DBA's maintenance job: every night at 01:00 Paris time,
// rebuild the indexes, never two at once.
const nightly = `{"name":"nightly-index-rebuild","cron":"0 1 * * *","time_zone":"Europe/Paris","queue":"maint",
	"body":"EXEC dbo.rebuild_indexes","timeout_seconds":7200,"max_attempts":1,"overlap":"skip"}`

// The schedules API on every dialect: create, read, change, pause, resume,
// run now, delete; the operator role for changes, each audited as its
// actor's; next fire times in UTC and in the schedule's zone.
func TestAPISchedules(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newAPIEnv(t, apiOpts{tokens: true, dialect: d})
		op, viewer := "alice:"+testOperatorToken, testViewerToken
		const name = "nightly-index-rebuild"
		path := "/api/schedules/" + name

		r := e.call("POST", "/api/schedules", op, nightly)
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
		require.Equal(t, path, r.header.Get("Location"))
		var s api.Schedule
		r.json(t, &s)
		require.Equal(t, "0 1 * * *", s.Cron)
		require.Equal(t, "Europe/Paris", s.TimeZone)
		require.Equal(t, "maint", s.Queue)
		require.Equal(t, 1, s.MaxAttempts)
		require.Equal(t, 100, s.Priority, "the default priority")
		require.InDelta(t, 7200, *s.TimeoutSeconds, 0.001)
		require.Equal(t, "skip", s.Overlap)
		require.Equal(t, "run_once", s.Misfire, "the default misfire policy")
		require.False(t, s.Paused)
		require.Equal(t, "operator:alice", s.CreatedBy)
		require.Nil(t, s.LastRun)
		require.Nil(t, s.Group)
		checkParisNights(t, s)
		require.Contains(t, string(r.body), `"next_fire_times":[{"utc":"`, "snake_case names")
		require.Contains(t, string(r.body), `:00:00Z"`, "RFC 3339 times in UTC")

		var list struct{ Schedules []api.Schedule }
		e.call("GET", "/api/schedules", viewer, "").json(t, &list)
		require.Len(t, list.Schedules, 1)
		require.Equal(t, s, list.Schedules[0], "the list shows what the create answered")
		var one api.Schedule
		r = e.call("GET", path, viewer, "")
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		r.json(t, &one)
		require.Equal(t, s, one)

		// An edit of the task keeps the next fire time; a new cron moves it.
		r = e.call("PATCH", path, op, `{"body":"EXEC dbo.rebuild_indexes @online = 1","group":"maintenance","priority":5}`)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		r.json(t, &one)
		require.Equal(t, "EXEC dbo.rebuild_indexes @online = 1", one.Body)
		require.Equal(t, "maintenance", *one.Group)
		require.Equal(t, 5, one.Priority)
		require.Equal(t, s.NextFireAt, one.NextFireAt, "an edit of the body keeps the next fire time")
		require.Equal(t, "operator:alice", one.UpdatedBy)
		r = e.call("PATCH", path, op, `{"cron":"30 2 * * *","group":null,"priority":null}`)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		r.json(t, &one)
		require.Equal(t, "02:30", one.NextFireTimes[0].Local.Format("15:04"), "the new cron's time, in Paris")
		require.Nil(t, one.Group, "null clears the group")
		require.Equal(t, 100, one.Priority, "null is the default priority")

		// Pause and resume.
		r = e.call("PATCH", path, op, `{"paused":true}`)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		r.json(t, &one)
		require.True(t, one.Paused)
		require.Nil(t, one.NextFireAt, "a paused schedule is due never")
		require.Empty(t, one.NextFireTimes)
		require.Contains(t, string(r.body), `"next_fire_times":[]`, "an empty list, not null")
		r = e.call("PATCH", path, op, `{"paused":false}`)
		r.json(t, &one)
		require.False(t, one.Paused)
		require.Len(t, one.NextFireTimes, 5)

		// Run now: a task of the schedule; again while it is unfinished, the same task (overlap skip).
		r = e.call("POST", path+"/run", op, "")
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
		var run api.Enqueued
		r.json(t, &run)
		require.False(t, run.Duplicate)
		require.Equal(t, fmt.Sprintf("/api/tasks/%d", run.ID), r.header.Get("Location"))
		require.Equal(t, name, *run.Schedule)
		require.Nil(t, run.FireAt, "a run now is no fire time's")
		require.Equal(t, "maint", run.Queue)
		require.Equal(t, "operator:alice", *run.CreatedBy)
		r = e.call("POST", path+"/run", op, "")
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		var again api.Enqueued
		r.json(t, &again)
		require.True(t, again.Duplicate)
		require.Equal(t, run.ID, again.ID)
		e.call("GET", path, viewer, "").json(t, &one)
		require.Equal(t, run.ID, one.LastRun.TaskID)
		require.Equal(t, "pending", *one.LastRun.State)

		var tasks api.TaskPage
		r = e.call("GET", "/api/tasks?schedule="+name, viewer, "")
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		r.json(t, &tasks)
		require.Len(t, tasks.Tasks, 1)
		require.Equal(t, run.ID, tasks.Tasks[0].ID)
		e.call("GET", "/api/tasks?schedule=another", viewer, "").json(t, &tasks)
		require.Empty(t, tasks.Tasks)

		// The viewer reads but changes nothing.
		for _, c := range []struct{ method, path, body string }{
			{"POST", "/api/schedules", strings.Replace(nightly, name, "other", 1)}, {"PATCH", path, `{"paused":true}`},
			{"DELETE", path, ""}, {"POST", path + "/run", ""}} {
			r := e.call(c.method, c.path, viewer, c.body)
			require.Equal(t, http.StatusForbidden, r.status, "%s %s: %s", c.method, c.path, r.body)
		}

		r = e.call("DELETE", path, op, "")
		require.Equal(t, http.StatusNoContent, r.status, "%s", r.body)
		require.Equal(t, http.StatusNotFound, e.call("GET", path, viewer, "").status)
		e.call("GET", "/api/tasks?schedule="+name, viewer, "").json(t, &tasks)
		require.Len(t, tasks.Tasks, 1, "its tasks stay")

		target := "schedule " + name
		for action, n := range map[string]int64{"create_schedule": 1, "update_schedule": 2, "pause_schedule": 1,
			"resume_schedule": 1, "run_schedule": 1, "delete_schedule": 1} {
			require.Equal(t, n, e.audited(t, "operator:alice", action, target), "audit rows of %s", action)
		}
	})
}

// checkParisNights: the next five fire times are consecutive nights at 01:00
// in Paris, the same instants in UTC, as the schedule package computes them.
func checkParisNights(t *testing.T, s api.Schedule) {
	t.Helper()
	require.Len(t, s.NextFireTimes, 5)
	require.NotNil(t, s.NextFireAt)
	require.True(t, s.NextFireAt.Equal(s.NextFireTimes[0].UTC), "the first is the next fire time")
	want, err := schedule.Preview("0 1 * * *", "Europe/Paris", s.NextFireTimes[0].UTC.Add(-time.Second), 5)
	require.NoError(t, err)
	for i, f := range s.NextFireTimes {
		require.Equal(t, time.UTC, f.UTC.Location())
		require.True(t, f.UTC.Equal(want[i]) && f.Local.Equal(want[i]), "fire time %d: %v, want %s", i, f, want[i])
		require.Equal(t, "01:00", f.Local.Format("15:04"), "01:00 in Paris")
		_, off := f.Local.Zone()
		require.Contains(t, []int{3600, 7200}, off, "the local time carries Paris's offset")
	}
}

// Bad input to the schedules API is a 4xx that names the field, and writes
// nothing (no schedule, no audit row), on every dialect.
func TestAPIScheduleRefusals(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newAPIEnv(t, apiOpts{dialect: d, maxRequest: 8192})
		r := e.call("POST", "/api/schedules", "", `{"name":"kept","cron":"@daily","body":"SELECT 1"}`)
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
		before, audits := e.written(t), e.auditCount(t)
		def := func(extra string) string { return `{"name":"s","cron":"0 1 * * *","body":"SELECT 1"` + extra + `}` }

		cases := []struct {
			name, method, path, body string
			status                   int
			field, want              string
		}{
			{"invalid cron", "POST", "/api/schedules", `{"name":"s","cron":"61 * * * *","body":"SELECT 1"}`, 400, "cron", "cannot be read"},
			{"four fields", "POST", "/api/schedules", `{"name":"s","cron":"* * * *","body":"SELECT 1"}`, 400, "cron", "cannot be read"},
			{"no cron", "POST", "/api/schedules", `{"name":"s","body":"SELECT 1"}`, 400, "cron", "empty"},
			{"an interval", "POST", "/api/schedules", `{"name":"s","cron":"@every 5m","body":"SELECT 1"}`, 400, "cron", "interval"},
			{"never fires", "POST", "/api/schedules", `{"name":"s","cron":"0 0 30 2 *","body":"SELECT 1"}`, 400, "cron", "can never fire"},
			{"unknown time zone", "POST", "/api/schedules", def(`,"time_zone":"Europe/Pariss"`), 400, "time_zone", "not a known IANA time zone"},
			{"the node's zone", "POST", "/api/schedules", def(`,"time_zone":"Local"`), 400, "time_zone", "each node"},
			{"body over the store's limit", "POST", "/api/schedules", `{"name":"s","cron":"0 1 * * *","body":"` + strings.Repeat("x", 5000) + `"}`, 400, "body", "over the limit of 4096 bytes"},
			{"request over the limit", "POST", "/api/schedules", def(`,"queue":"` + strings.Repeat("x", 9000) + `"`), 413, "", "over the limit of 8192 bytes"},
			{"blank body", "POST", "/api/schedules", `{"name":"s","cron":"0 1 * * *","body":"  "}`, 400, "body", "empty"},
			{"NUL in the body", "POST", "/api/schedules", `{"name":"s","cron":"0 1 * * *","body":"SELECT 1\u0000"}`, 400, "body", "NUL"},
			{"no name", "POST", "/api/schedules", `{"cron":"0 1 * * *","body":"SELECT 1"}`, 400, "name", "not a schedule name"},
			{"bad name", "POST", "/api/schedules", `{"name":"has space","cron":"0 1 * * *","body":"SELECT 1"}`, 400, "name", "not a schedule name"},
			{"bad queue", "POST", "/api/schedules", def(`,"queue":"a/b"`), 400, "queue", "not a queue name"},
			{"bad priority", "POST", "/api/schedules", def(`,"priority":40000`), 400, "priority", "32767"},
			{"max_attempts 0", "POST", "/api/schedules", def(`,"max_attempts":0`), 400, "max_attempts", "use 1 to 1000"},
			{"negative timeout", "POST", "/api/schedules", def(`,"timeout_seconds":-1`), 400, "timeout_seconds", "use 0"},
			{"NUL in the group", "POST", "/api/schedules", def(`,"group":"g\u0000"`), 400, "group", "NUL"},
			{"unknown overlap", "POST", "/api/schedules", def(`,"overlap":"queue"`), 400, "overlap", "skip, allow"},
			{"unknown misfire", "POST", "/api/schedules", def(`,"misfire":"all"`), 400, "misfire", "run_once, skip"},
			{"unknown field", "POST", "/api/schedules", def(`,"enabled":true`), 400, "enabled", "not a known field"},
			{"wrong type", "POST", "/api/schedules", def(`,"paused":"no"`), 400, "paused", "true or false"},
			{"name taken", "POST", "/api/schedules", `{"name":"kept","cron":"@hourly","body":"SELECT 2"}`, 409, "", "exists"},
			{"patch: invalid cron", "PATCH", "/api/schedules/kept", `{"cron":"0 0 31 4 *"}`, 400, "cron", "can never fire"},
			{"patch: unknown zone", "PATCH", "/api/schedules/kept", `{"time_zone":"Nowhere/Atlantis"}`, 400, "time_zone", "not a known"},
			{"patch: body over the limit", "PATCH", "/api/schedules/kept", `{"body":"` + strings.Repeat("y", 4097) + `"}`, 400, "body", "over the limit"},
			{"patch: null cron", "PATCH", "/api/schedules/kept", `{"cron":null}`, 400, "cron", "cannot be null"},
			{"patch: null paused", "PATCH", "/api/schedules/kept", `{"paused":null}`, 400, "paused", "cannot be null"},
			{"patch: the name", "PATCH", "/api/schedules/kept", `{"name":"renamed"}`, 400, "name", "cannot be changed"},
			{"patch: nothing", "PATCH", "/api/schedules/kept", `{}`, 400, "body", "changes nothing"},
			{"patch: max_attempts 0", "PATCH", "/api/schedules/kept", `{"max_attempts":0}`, 400, "max_attempts", "use 1"},
			{"patch: timeout too long", "PATCH", "/api/schedules/kept", `{"timeout_seconds":99999999}`, 400, "timeout_seconds", "use 0"},
			{"patch: unknown schedule", "PATCH", "/api/schedules/nope", `{"paused":true}`, 404, "", "there is no schedule nope"},
			{"patch: bad name in the path", "PATCH", "/api/schedules/bad%20name", `{"paused":true}`, 400, "name", "not a schedule name"},
			{"run an unknown schedule", "POST", "/api/schedules/nope/run", "", 404, "", "there is no schedule nope"},
			{"delete an unknown schedule", "DELETE", "/api/schedules/nope", "", 404, "", "there is no schedule nope"},
			{"get an unknown schedule", "GET", "/api/schedules/nope", "", 404, "", "there is no schedule nope"},
			{"a query parameter", "GET", "/api/schedules?paused=true", "", 400, "paused", "not a known query parameter"},
			{"bad schedule filter", "GET", "/api/tasks?schedule=a%20b", "", 400, "schedule", "not a schedule name"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) { e.refused(t, c.method, c.path, c.body, c.status, c.field, c.want) })
		}
		require.Equal(t, before, e.written(t), "a refused request writes nothing")
		require.Equal(t, audits, e.auditCount(t), "nor an audit row")
		tasks, err := e.store.List(e.ctx, queue.ListParams{})
		require.NoError(t, err)
		require.Empty(t, tasks)
	})
}
