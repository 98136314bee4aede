package web

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/testenv"
)

// One timeout rule: the enqueue form, the schedule form and the API accept
// up to thirty days and refuse more with the same sentence, which writes the
// number as a DBA typed it (not 3.456e+06).
func TestTimeoutOneRule(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newUIEnv(t, uiOpts{dialect: d})
		a := newAPIEnv(t, apiOpts{dialect: d})
		const tooLong = "3456000" // 40 days
		const want = "is 3456000 seconds (40 days): use 0 (no limit) up to 2592000 (30 days)"

		form := e.post("/tasks/new", url.Values{"body": {"SELECT 1"}, "timeout_seconds": {tooLong}})
		require.Equal(t, http.StatusUnprocessableEntity, form.status, "the form refuses 40 days as the API does")
		require.Contains(t, form.body, want)
		year := e.post("/tasks/new", url.Values{"body": {"SELECT 1"}, "timeout_seconds": {"31622400"}})
		require.Equal(t, http.StatusUnprocessableEntity, year.status, "366 days is refused too")
		sched := e.post("/schedules/new", url.Values{"name": {"s"}, "cron": {"@daily"}, "body": {"SELECT 1"}, "timeout_seconds": {tooLong}})
		require.Equal(t, http.StatusUnprocessableEntity, sched.status)
		require.Contains(t, sched.body, want)

		r := a.call("POST", "/api/tasks", "", `{"body":"SELECT 1","timeout_seconds":3456000}`)
		require.Equal(t, http.StatusBadRequest, r.status)
		require.Equal(t, "invalid timeout_seconds: "+want, r.errorMsg(t))

		ok := e.post("/tasks/new", url.Values{"body": {"SELECT 1"}, "timeout_seconds": {"2592000"}})
		require.Equal(t, http.StatusSeeOther, ok.status, "thirty days is the limit, and allowed: %s", ok.body)
		_, err := e.store.Enqueue(e.ctx, []queue.NewTask{{Body: "SELECT 1", Timeout: queue.MaxTimeout + 1e6}})
		require.True(t, queue.IsValidation(err), "the store holds the same rule: %v", err)
	})
}
