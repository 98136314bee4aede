package web

import (
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/testenv"
)

// The audit page lists who changed what, newest first, each object linked to
// its page, a hundred rows a page with an Older link; the viewer role reads
// it; its export downloads the whole log.
func TestAuditPage(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newUIEnv(t, uiOpts{dialect: d})
		id := e.enqueue(queue.NewTask{Queue: "etl", Body: "SELECT 1"})[0]
		require.Equal(t, http.StatusSeeOther, e.post("/queues/etl", url.Values{"paused": {"true"}}).status)
		require.Equal(t, http.StatusSeeOther, e.post(fmt.Sprintf("/tasks/%d/cancel", id), url.Values{}).status)
		for i := range 101 {
			require.NoError(t, e.store.SetGroupLimit(e.ctx, fmt.Sprintf("g%03d", i), 2, "operator:bob"))
		}

		p := e.get("/audit")
		require.Equal(t, http.StatusOK, p.status, p.body)
		require.Contains(t, p.body, `<a href="/audit" class="active">Audit</a>`, "the page is in the navigation")
		require.Equal(t, 100, strings.Count(p.body, "<tr data-id="), "a page is a hundred rows")
		require.Contains(t, p.body, `<a href="/tasks?group=g100">group g100</a>`, "newest first, the object linked")
		require.NotContains(t, p.body, "update_queue", "the oldest rows are on the next page")
		require.Contains(t, p.body, `href="/audit/export?format=ndjson"`)
		older := regexpFind(t, p.body, `<a href="(/audit\?before=\d+)">Older`)

		next := e.get(older)
		require.Equal(t, http.StatusOK, next.status)
		require.Equal(t, 3, strings.Count(next.body, "<tr data-id="))
		require.Contains(t, next.body, fmt.Sprintf(`<a href="/tasks/%d">task %d</a>`, id, id))
		require.Contains(t, next.body, `<a href="/tasks?queue=etl">queue etl</a>`)
		require.Regexp(t, `<td class="mono">local</td><td><span class="action">update_queue</span>`, next.body, "who and what")
		require.Contains(t, next.body, "paused=true", "what changed")
		require.Contains(t, next.body, `<time datetime=`, "when")
		require.Contains(t, next.body, "Newest")

		exp := e.get("/audit/export?format=ndjson")
		require.Equal(t, http.StatusOK, exp.status)
		require.Equal(t, 103, strings.Count(exp.body, "\n"), "the export is the whole log")
		require.Equal(t, http.StatusBadRequest, e.get("/audit?before=x").status)

		secured := newAPIEnv(t, apiOpts{dialect: d, tokens: true})
		v := secured.call("GET", "/audit", testViewerToken, "")
		require.Equal(t, http.StatusOK, v.status, "the viewer reads the audit page: %s", v.body)
	})
}

// regexpFind returns the first group of pattern's first match in s.
func regexpFind(t *testing.T, s, pattern string) string {
	t.Helper()
	m := regexp.MustCompile(pattern).FindStringSubmatch(s)
	require.NotNil(t, m, "no %s in the page", pattern)
	return html.UnescapeString(m[1])
}
