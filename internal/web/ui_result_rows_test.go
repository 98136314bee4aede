package web

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/testenv"
)

// The overview's settings form sets result rows only when changed, and a
// value out of range or not a number is refused in the queue's row.
func TestQueueFormResultRows(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newUIEnv(t, uiOpts{dialect: d})
		e.enqueue(queue.NewTask{Queue: "rr", Body: "SELECT 1"})
		set := func(v, was string) page {
			return e.post("/queues/rr", url.Values{"settings": {"1"}, "workers": {""}, "max_running": {""},
				"result_rows": {v}, "result_rows_was": {was}})
		}
		p := set("25", "0")
		require.Equal(t, http.StatusSeeOther, p.status, p.body)
		require.Contains(t, e.get("/").body, "result_rows=25")
		require.Equal(t, 25, e.queueNamed("rr").ResultRows)

		p = e.post("/queues/rr", url.Values{"settings": {"1"}, "workers": {"3"}, "max_running": {""},
			"result_rows": {"25"}, "result_rows_was": {"25"}})
		require.Equal(t, http.StatusSeeOther, p.status, p.body)
		require.NotContains(t, e.get("/").body, "result_rows=25 ", "an unchanged value is not written again")
		require.Equal(t, 25, e.queueNamed("rr").ResultRows)

		for _, bad := range []string{"5000", "many"} {
			p = set(bad, "25")
			require.Equal(t, http.StatusUnprocessableEntity, p.status, p.body)
			row := p.body[strings.Index(p.body, `id="queue-rr"`):]
			require.Contains(t, row[:strings.Index(row, "</tr>")], "1000", "the message is in the queue's row")
			require.Equal(t, 25, e.queueNamed("rr").ResultRows, "nothing changed")
		}
		require.Equal(t, http.StatusSeeOther, set("", "25").status, "empty is 0: off")
		require.Zero(t, e.queueNamed("rr").ResultRows)
	})
}
