package web

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/testenv"
	"readpast/internal/web/api"
	"readpast/internal/web/auth"
)

// The groups page: each group's limit, running and pending tasks, and who
// changed the limit last; the operator sets the limit in place (audited), a
// bad value comes back in its row, a URL naming no group is 404; the viewer
// reads the page and GET /api/groups, and changes nothing.
func TestGroupsPage(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newUIEnv(t, uiOpts{dialect: d})
		e.enqueue(queue.NewTask{Body: "SELECT 1", Group: "nightly", Delay: 3600e9},
			queue.NewTask{Body: "SELECT 1", Group: "nightly", Delay: 3600e9},
			queue.NewTask{Body: "SELECT 1", Group: "adhoc"})
		p := e.get("/groups")
		require.Equal(t, http.StatusOK, p.status, p.body)
		require.Contains(t, p.body, `<a href="/groups" class="active">Groups</a>`, "the page is in the navigation")
		row := between(t, p.body, `<tr id="group-nightly">`, `</tr>`)
		require.Contains(t, row, `<a href="/tasks?group=nightly">nightly</a>`)
		require.Contains(t, row, `name="max_running" min="1" value="1"`, "the limit, editable")
		require.Regexp(t, `<td class="num">2</td>`, row, "two pending")

		set := e.post("/groups/nightly", url.Values{"max_running": {"4"}})
		require.Equal(t, http.StatusSeeOther, set.status, set.body)
		require.Contains(t, e.get(set.location).body, "Group nightly: at most 4 running at once.")
		gs, err := e.store.Groups(e.ctx)
		require.NoError(t, err)
		for _, g := range gs {
			if g.Name == "nightly" {
				require.Equal(t, 4, g.MaxRunning)
				require.Equal(t, "local", g.UpdatedBy, "who changed it")
			}
		}
		row = between(t, e.get("/groups").body, `<tr id="group-nightly">`, `</tr>`)
		require.Contains(t, row, `<td class="mono">local</td>`, "the page says who changed it")
		audit, err := e.store.Audit(e.ctx, queue.AuditQuery{Limit: 1})
		require.NoError(t, err)
		require.Equal(t, "local set_group_limit group nightly 4", audit[0].Actor+" "+audit[0].Action+" "+audit[0].Target+" "+audit[0].Detail)

		bad := e.post("/groups/nightly", url.Values{"max_running": {"0"}})
		require.Equal(t, http.StatusUnprocessableEntity, bad.status)
		require.Contains(t, between(t, bad.body, `<tr id="group-nightly">`, `</tr>`), "a group admits at least 1 task")
		junk := e.post("/groups/nightly", url.Values{"max_running": {"many"}})
		require.Equal(t, http.StatusUnprocessableEntity, junk.status)
		require.Contains(t, junk.body, `&#34;many&#34; is not a whole number`)
		missing := e.post("/groups/nope", url.Values{"max_running": {"2"}})
		require.Equal(t, http.StatusNotFound, missing.status, "a URL naming no group makes none")
		require.Contains(t, missing.body, "there is no group nope")
		noCSRF := e.post("/groups/nightly", url.Values{"max_running": {"2"}, auth.CSRFField: {"forged"}})
		require.Equal(t, http.StatusForbidden, noCSRF.status, "the form needs its CSRF token")

		a := newAPIEnv(t, apiOpts{dialect: d, tokens: true})
		_, err = a.store.Enqueue(a.ctx, []queue.NewTask{{Body: "SELECT 1", Group: "g", Delay: 3600e9}})
		require.NoError(t, err)
		r := a.call("GET", "/api/groups", testViewerToken, "")
		require.Equal(t, http.StatusOK, r.status)
		var out struct{ Groups []api.Group }
		r.json(t, &out)
		require.Len(t, out.Groups, 1)
		require.EqualValues(t, 1, out.Groups[0].Pending, "the API gives the pending count too")
		require.Equal(t, http.StatusOK, a.call("GET", "/groups", testViewerToken, "").status, "the viewer reads the page")
		require.Equal(t, http.StatusForbidden, a.call("PUT", "/api/groups/g", testViewerToken, `{"max_running":2}`).status)
	})
}

// between returns the part of s from start to the first end after it.
func between(t *testing.T, s, start, end string) string {
	t.Helper()
	i := strings.Index(s, start)
	require.GreaterOrEqual(t, i, 0, "no %s", start)
	j := strings.Index(s[i:], end)
	require.GreaterOrEqual(t, j, 0, "no %s after %s", end, start)
	return s[i : i+j]
}
