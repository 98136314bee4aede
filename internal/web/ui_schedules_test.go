package web

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/schedule"
	"readpast/internal/testenv"
	"readpast/internal/web/auth"
)

// nightlyForm is the schedule form as the DBA fills it for the nightly
// index rebuild.
func nightlyForm(action string) url.Values {
	return url.Values{"name": {"nightly-index-rebuild"}, "cron": {"0 1 * * *"}, "time_zone": {"Europe/Paris"},
		"queue": {"maint"}, "body": {"EXEC dbo.rebuild_indexes\r\n"}, "max_attempts": {"1"}, "timeout_seconds": {"7200"},
		"overlap": {"skip"}, "misfire": {"run_once"}, "action": {action}}
}

// fieldErrorAfter reports whether a field's error message follows the field
// named name (and comes before the next field).
func fieldErrorAfter(body, name, msg string) bool {
	i := strings.Index(body, `name="`+name+`"`)
	if i < 0 {
		return false
	}
	rest := body[i:]
	j := strings.Index(rest, `class="field-error"`)
	return j > 0 && strings.Contains(rest[j:min(len(rest), j+400)], msg) && !strings.Contains(rest[len(`name="`):j], `name="`)
}

// The schedules page and its form without a browser: Preview shows the next
// fire times in the zone and in UTC and writes nothing; a refused field comes
// back next to its field; Create, Pause, Resume, Run now, Edit and Delete do
// what they say, audited as the operator's; the tasks of a schedule show it.
func TestSchedulePages(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newUIEnv(t, uiOpts{dialect: d})
		list := e.get("/schedules")
		require.Equal(t, http.StatusOK, list.status)
		require.Contains(t, list.body, "No schedules yet.")
		require.Contains(t, list.body, `href="/schedules" class="active"`, "the nav links the page")
		form := e.get("/schedules/new")
		require.Equal(t, http.StatusOK, form.status)
		for _, f := range []string{"name", "cron", "time_zone", "queue", "body", "priority", "group", "max_attempts",
			"timeout_seconds", "transactional", "paused", "overlap", "misfire", auth.CSRFField} {
			require.Contains(t, form.body, `name="`+f+`"`, "the form has the %s field", f)
		}

		// Preview: the next five nights at 01:00 in Paris, and in UTC; nothing stored.
		p := e.post("/schedules/new", nightlyForm("preview"))
		require.Equal(t, http.StatusOK, p.status, p.body)
		want, err := schedule.Preview("0 1 * * *", "Europe/Paris", time.Now(), 5)
		require.NoError(t, err)
		for _, at := range want {
			require.Contains(t, p.body, at.Format("2006-01-02 15:04 MST"), "the fire time in Paris")
			require.Contains(t, p.body, at.UTC().Format("2006-01-02 15:04 UTC"), "and in UTC")
		}
		require.Contains(t, p.body, "EXEC dbo.rebuild_indexes", "the form keeps what was typed")
		ss, err := e.store.Schedules(e.ctx)
		require.NoError(t, err)
		require.Empty(t, ss, "a preview writes nothing")

		for _, c := range []struct {
			field, value, msg string
		}{
			{"cron", "0 0 30 2 *", "can never fire"},
			{"cron", "61 * * * *", "cannot be read"},
			{"time_zone", "Europe/Pariss", "not a known IANA time zone"},
			{"body", " ", "is empty"},
			{"priority", "urgent", "is not a whole number"},
			{"max_attempts", "0", "use 1 to 1000"},
			{"timeout_seconds", "-5", "use 0"},
			{"name", "no spaces", "not a schedule name"},
			{"queue", "a/b", "not a queue name"},
			{"overlap", "sometimes", "skip, allow"},
		} {
			for _, action := range []string{"preview", "save"} {
				f := nightlyForm(action)
				f.Set(c.field, c.value)
				p := e.post("/schedules/new", f)
				require.Equal(t, http.StatusUnprocessableEntity, p.status, "%s %q (%s)", c.field, c.value, action)
				require.True(t, fieldErrorAfter(p.body, c.field, c.msg), "%s %q (%s): the message %q sits next to its field:\n%s",
					c.field, c.value, action, c.msg, p.body)
			}
		}
		ss, err = e.store.Schedules(e.ctx)
		require.NoError(t, err)
		require.Empty(t, ss, "a refused form writes nothing")

		// Create.
		p = e.post("/schedules/new", nightlyForm("save"))
		require.Equal(t, http.StatusSeeOther, p.status, p.body)
		require.Equal(t, "/schedules#schedule-nightly-index-rebuild", p.location)
		list = e.get("/schedules")
		require.Contains(t, list.body, "Schedule nightly-index-rebuild created: next fire")
		row := scheduleRowHTML(t, list.body, "nightly-index-rebuild")
		for _, at := range want {
			require.Contains(t, row, at.Format("Mon 2006-01-02 15:04 MST"))
		}
		require.Contains(t, row, "enabled")
		require.Contains(t, row, "not run yet")
		s, err := e.store.GetSchedule(e.ctx, "nightly-index-rebuild")
		require.NoError(t, err)
		require.Equal(t, "EXEC dbo.rebuild_indexes\n", s.Task.Body, "line ends as typed, LF")
		require.Equal(t, 2*time.Hour, s.Task.Timeout)
		require.Equal(t, "local", s.CreatedBy)
		taken := e.post("/schedules/new", nightlyForm("save"))
		require.Equal(t, http.StatusUnprocessableEntity, taken.status)
		require.True(t, fieldErrorAfter(taken.body, "name", "exists already"))

		// Pause, resume.
		p = e.post("/schedules/nightly-index-rebuild/pause", url.Values{"return": {"/schedules"}})
		require.Equal(t, http.StatusSeeOther, p.status, p.body)
		list = e.get("/schedules")
		require.Contains(t, list.body, "Schedule nightly-index-rebuild paused")
		row = scheduleRowHTML(t, list.body, "nightly-index-rebuild")
		require.Contains(t, row, `badge st-paused`)
		require.Contains(t, row, "none while paused")
		require.Contains(t, row, "/resume")
		p = e.post("/schedules/nightly-index-rebuild/resume", url.Values{})
		require.Equal(t, http.StatusSeeOther, p.status, p.body)
		require.Contains(t, e.get("/schedules").body, "Schedule nightly-index-rebuild resumed: next fire "+want[0].Format("Mon 2006-01-02 15:04 MST"))

		// Run now, twice: the second finds the first unfinished (no workers here).
		p = e.post("/schedules/nightly-index-rebuild/run", url.Values{})
		require.Equal(t, http.StatusSeeOther, p.status, p.body)
		runs, err := e.store.List(e.ctx, queue.ListParams{Schedule: "nightly-index-rebuild"})
		require.NoError(t, err)
		require.Len(t, runs, 1)
		list = e.get(p.location)
		require.Contains(t, list.body, fmt.Sprintf("Schedule nightly-index-rebuild: task %d enqueued on queue maint.", runs[0].ID))
		row = scheduleRowHTML(t, list.body, "nightly-index-rebuild")
		require.Contains(t, row, fmt.Sprintf(`<a class="last-run" href="/tasks/%d">task %d</a>`, runs[0].ID, runs[0].ID))
		require.Contains(t, row, "st-pending")
		p = e.post("/schedules/nightly-index-rebuild/run", url.Values{})
		require.Contains(t, e.get(p.location).body, fmt.Sprintf("was not run: its latest run, task %d, is still pending", runs[0].ID))

		// The run shows its schedule; the tasks page filters by schedule.
		task := e.get(fmt.Sprintf("/tasks/%d", runs[0].ID))
		require.Contains(t, task.body, `<dt>schedule</dt><dd><a href="/schedules#schedule-nightly-index-rebuild">nightly-index-rebuild</a>`)
		require.Contains(t, task.body, "run now (outside the fire times)")
		e.enqueue(queue.NewTask{Queue: "maint", Body: "SELECT 'not scheduled'"})
		filtered := e.get("/tasks?schedule=nightly-index-rebuild")
		require.Equal(t, http.StatusOK, filtered.status)
		require.Contains(t, filtered.body, fmt.Sprintf(`data-id="%d"`, runs[0].ID))
		require.NotContains(t, filtered.body, "not scheduled")
		require.Contains(t, filtered.body, `name="schedule" value="nightly-index-rebuild"`)
		require.Equal(t, http.StatusBadRequest, e.get("/tasks?schedule=a%20b").status)

		// Edit: the form shows the schedule and its next fire times; Save writes it.
		edit := e.get("/schedules/nightly-index-rebuild/edit")
		require.Equal(t, http.StatusOK, edit.status)
		require.Contains(t, edit.body, `value="0 1 * * *"`)
		require.Contains(t, edit.body, `value="7200"`)
		require.Contains(t, edit.body, want[0].Format("Mon 2006-01-02 15:04 MST"))
		f := nightlyForm("save")
		f.Del("name")
		f.Set("cron", "30 2 * * *")
		f.Set("body", "EXEC dbo.rebuild_indexes @online = 1")
		p = e.post("/schedules/nightly-index-rebuild/edit", f)
		require.Equal(t, http.StatusSeeOther, p.status, p.body)
		s, err = e.store.GetSchedule(e.ctx, "nightly-index-rebuild")
		require.NoError(t, err)
		require.Equal(t, "30 2 * * *", s.Cron)
		require.Equal(t, "EXEC dbo.rebuild_indexes @online = 1", s.Task.Body)
		require.Equal(t, "02:30", s.NextFireAt.In(mustZone(t, "Europe/Paris")).Format("15:04"))
		f.Set("cron", "0 0 31 2 *")
		bad := e.post("/schedules/nightly-index-rebuild/edit", f)
		require.Equal(t, http.StatusUnprocessableEntity, bad.status)
		require.True(t, fieldErrorAfter(bad.body, "cron", "can never fire"))
		require.Equal(t, http.StatusNotFound, e.get("/schedules/nope/edit").status)

		// Delete asks first, then deletes; the run stays.
		confirm := e.get("/schedules/nightly-index-rebuild/delete")
		require.Equal(t, http.StatusOK, confirm.status)
		require.Contains(t, confirm.body, "Delete schedule nightly-index-rebuild?")
		p = e.post("/schedules/nightly-index-rebuild/delete", url.Values{})
		require.Equal(t, http.StatusSeeOther, p.status, p.body)
		require.Contains(t, e.get("/schedules").body, "No schedules yet.")
		_, err = e.store.Get(e.ctx, runs[0].ID)
		require.NoError(t, err, "its tasks stay")
		require.Equal(t, http.StatusNotFound, e.post("/schedules/nightly-index-rebuild/run", url.Values{}).status)

		audit := strings.Join(uiAudit(t, e), "\n")
		for _, action := range []string{"create_schedule", "pause_schedule", "resume_schedule", "run_schedule", "update_schedule", "delete_schedule"} {
			require.Contains(t, audit, "local "+action+" schedule nightly-index-rebuild", "the %s is audited", action)
		}
	})
}

// The schedule buttons need the operator role and the CSRF token.
func TestScheduleButtonsNeedOperatorAndCSRF(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		env := newAPIEnv(t, apiOpts{tokens: true, dialect: d})
		_, err := schedule.Editor{Store: env.store}.CreateSchedule(env.ctx, queue.ScheduleDef{Name: "s", Cron: "@daily", Task: queue.ScheduleTask{Body: "SELECT 1"}}, "test")
		require.NoError(t, err)
		req := env.newRequest("GET", "/schedules", testViewerToken, "")
		req.Header.Set("Accept", "text/html")
		r := env.send(req, nil)
		require.Equal(t, http.StatusOK, r.status, "a viewer reads the schedules")
		require.Contains(t, string(r.body), `id="schedule-s"`)
		for _, forbidden := range []string{"/schedules/s/run", "/schedules/s/pause", "/schedules/s/edit", "/schedules/s/delete", "/schedules/new"} {
			require.NotContains(t, string(r.body), forbidden, "a viewer sees no %s", forbidden)
		}
		for _, path := range []string{"/schedules/new", "/schedules/s/run", "/schedules/s/pause", "/schedules/s/resume", "/schedules/s/edit", "/schedules/s/delete"} {
			post := env.newRequest("POST", path, testViewerToken, "")
			post.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			require.Equal(t, http.StatusForbidden, env.send(post, nil).status, "a viewer cannot post %s", path)
		}

		e := newUIEnv(t, uiOpts{dialect: d})
		_, err = schedule.Editor{Store: e.store}.CreateSchedule(e.ctx, queue.ScheduleDef{Name: "s", Cron: "@daily", Task: queue.ScheduleTask{Body: "SELECT 1"}}, "test")
		require.NoError(t, err)
		for _, path := range []string{"/schedules/new", "/schedules/s/run", "/schedules/s/pause", "/schedules/s/edit", "/schedules/s/delete"} {
			p := e.post(path, url.Values{auth.CSRFField: {"forged"}, "name": {"x"}, "cron": {"@daily"}, "body": {"SELECT 1"}})
			require.Equal(t, http.StatusForbidden, p.status, "%s without a valid token", path)
		}
		s, err := e.store.GetSchedule(e.ctx, "s")
		require.NoError(t, err)
		require.False(t, s.Paused)
		require.Zero(t, s.LastTaskID)
	})
}

var scheduleRowPattern = regexp.MustCompile(`(?s)<tr data-id="\d+" id="schedule-([^"]+)".*?</tr>`)

// scheduleRowHTML is the row of the schedule named name.
func scheduleRowHTML(t *testing.T, body, name string) string {
	t.Helper()
	for _, m := range scheduleRowPattern.FindAllStringSubmatch(body, -1) {
		if m[1] == name {
			return m[0]
		}
	}
	t.Fatalf("no row for schedule %s in:\n%s", name, body)
	return ""
}

func mustZone(t *testing.T, name string) *time.Location {
	loc, err := time.LoadLocation(name)
	require.NoError(t, err)
	return loc
}

// uiAudit reads the audit log of a dashboard as "actor action target".
func uiAudit(t *testing.T, e *uiEnv) []string {
	t.Helper()
	a := &apiEnv{t: t, ctx: e.ctx, dialect: e.dialect, dsn: e.dsn}
	return a.auditRows()
}
