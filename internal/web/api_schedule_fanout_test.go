package web

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/testenv"
	"readpast/internal/web/api"
)

// A schedule that fans out, through the API: created with targets and a
// limit, read back, run now as one task per target of the live node in one
// fan-out group, then made a one-target schedule again; what a fan-out
// refuses answers 400 naming the field.
func TestAPIScheduleFanOut(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newAPIEnv(t, apiOpts{dialect: d, tokens: true, node: true, lease: time.Minute})
		op, viewer := "alice:"+testOperatorToken, testViewerToken
		const path = "/api/schedules/every-server"
		r := e.call("POST", "/api/schedules", op, `{"name":"every-server","cron":"0 1 * * *","body":"SELECT 1",
			"queue":"fan","targets":["store","default"],"fanout_limit":1}`)
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
		var s api.Schedule
		r.json(t, &s)
		require.Equal(t, []string{"store", "default"}, s.Targets)
		require.Equal(t, 1, *s.FanOutLimit)
		require.Nil(t, s.Target)

		r = e.call("POST", path+"/run", op, "")
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
		var run api.Enqueued
		r.json(t, &run)
		require.NotNil(t, run.Group)
		require.True(t, strings.HasPrefix(*run.Group, "fanout-"), "a run of the schedule is a fan-out: %s", *run.Group)

		var tasks api.TaskPage
		e.call("GET", "/api/tasks?schedule=every-server", viewer, "").json(t, &tasks)
		require.Len(t, tasks.Tasks, 2, "one task per target")
		var targets []string
		for _, task := range tasks.Tasks {
			require.Equal(t, *run.Group, *task.Group, "one fan-out")
			targets = append(targets, *task.Target)
		}
		slices.Sort(targets)
		require.Equal(t, []string{"default", "store"}, targets)
		var fan api.FanOutPage
		r = e.call("GET", "/api/fanouts/"+*run.Group, viewer, "")
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		r.json(t, &fan)
		require.Len(t, fan.Tasks, 2, "the fan-out's page lists both")

		r = e.call("PATCH", path, op, `{"targets":null,"fanout_limit":null,"target":"store"}`)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		r.json(t, &s)
		require.Empty(t, s.Targets)
		require.Nil(t, s.FanOutLimit)
		require.Equal(t, "store", *s.Target)
		require.Contains(t, string(r.body), `"targets":[]`)

		r = e.call("POST", "/api/schedules", op, `{"name":"eu","cron":"0 1 * * *","body":"SELECT 1","targets":["tag:eu"]}`)
		require.Equal(t, http.StatusCreated, r.status, "a tag no node has yet may be named: it resolves at each fire: %s", r.body)
		refused := func(path, body, field, want string) {
			t.Helper()
			r := e.call("POST", path, op, body)
			require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
			var b api.ErrorBody
			r.json(t, &b)
			require.Equal(t, field, b.Field, "%s", r.body)
			require.Contains(t, b.Error, want)
		}
		refused(path[:len("/api/schedules/")]+"eu/run", "", "targets", "tag:eu")

		def := func(extra string) string { return `{"name":"bad","cron":"0 1 * * *","body":"SELECT 1"` + extra + `}` }
		for _, c := range []struct{ body, field, want string }{
			{def(`,"targets":["store"],"target":"store"`), "target", "both set"},
			{def(`,"targets":["store"],"fanout_limit":0`), "fanout_limit", "1 or more"},
			{def(`,"fanout_limit":2`), "fanout_limit", "without targets"},
			{def(`,"targets":["tag:"]`), "targets", "tag:NAME"},
			{def(`,"targets":["store"],"transactional":true`), "transactional", "only on the store"},
			{def(`,"targets":["store"],"group":"g"`), "group", "group of its own"},
		} {
			refused("/api/schedules", c.body, c.field, c.want)
		}
	})
}
