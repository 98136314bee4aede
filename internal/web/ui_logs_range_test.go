package web

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/testenv"
)

// The log page takes a date range (from, to) as the API's since and until
// do: its fields send UTC wall-clock times, a link may carry RFC 3339 or a
// duration ago; the range is kept by the pager, the export and the live view,
// and a range that ends before it starts is refused with a sentence.
func TestLogPageDateRange(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newUIEnv(t, uiOpts{dialect: d, node: true})
		id := e.enqueue(queue.NewTask{Queue: "r", Body: "SELECT 1"})[0]
		e.waitState(id, queue.StateSucceeded, 20*time.Second)
		link := fmt.Sprintf(`href="/tasks/%d"`, id)
		field := func(t time.Time) string { return t.UTC().Format("2006-01-02T15:04") }
		now := time.Now()

		page := e.get("/logs?" + url.Values{"since": {field(now.Add(-time.Hour))}, "until": {field(now.Add(time.Hour))}}.Encode())
		require.Equal(t, http.StatusOK, page.status, page.body)
		require.Contains(t, page.body, link, "the attempt finished inside the range")
		require.Contains(t, page.body, `name="since" value="`+field(now.Add(-time.Hour))+`"`, "the field keeps the range")
		require.Regexp(t, `/logs/export\?since=[^"]+&amp;until=[^"]+&amp;format=json`, page.body, "the export keeps the range")
		require.Regexp(t, `data-live-query="since=[^"]+&amp;until=`, page.body, "the live view keeps the range")

		later := e.get("/logs?since=" + url.QueryEscape(now.Add(time.Hour).UTC().Format(time.RFC3339)))
		require.Equal(t, http.StatusOK, later.status)
		require.NotContains(t, later.body, link, "nothing finished after the range's start")
		earlier := e.get("/logs?until=" + field(now.Add(-time.Hour)))
		require.NotContains(t, earlier.body, link, "nothing finished before the range's end")
		day := e.get("/logs?since=24h")
		require.Contains(t, day.body, link, "since=24h is the last day")

		exp := e.get("/logs/export?format=ndjson&since=" + url.QueryEscape(now.Add(time.Hour).UTC().Format(time.RFC3339)))
		require.Equal(t, http.StatusOK, exp.status)
		require.Empty(t, exp.body, "the export holds the range")

		bad := e.get("/logs?since=" + field(now) + "&until=" + field(now.Add(-time.Hour)))
		require.Equal(t, http.StatusBadRequest, bad.status)
		require.Contains(t, bad.body, "is not after since")
		junk := e.get("/logs?since=yesterday")
		require.Equal(t, http.StatusBadRequest, junk.status)
		require.Contains(t, junk.body, "is neither a time")
	})
}
