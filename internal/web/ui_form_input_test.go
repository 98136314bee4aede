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

// A form over the request limit is refused 413, saying so (issue 25): it
// answered 403, since net/http drops a form past 10 MB, CSRF token included,
// and the page said to reload it.
func TestFormOverTheLimitIs413(t *testing.T) {
	t.Parallel()
	e := newUIEnv(t, uiOpts{dialect: testenv.SQLite})
	for _, size := range []int{11 << 20, 9 << 20} { // over and under net/http's 10 MB; both over the 8 MiB limit
		p := e.post("/tasks/new", url.Values{"body": {"SELECT '" + strings.Repeat("x", size) + "'"}})
		require.Equal(t, http.StatusRequestEntityTooLarge, p.status, "a form of %d bytes: %.300s", size, p.body)
		require.Contains(t, p.body, "over the limit of")
	}
	tasks, err := e.store.List(e.ctx, queue.ListParams{Limit: 1})
	require.NoError(t, err)
	require.Empty(t, tasks, "nothing was enqueued")
}

// A checkbox's field with a value no checkbox sends is refused 400, naming
// the field (issue 25): transactional=maybe was taken for false.
func TestFormRefusesACheckboxValueNoCheckboxSends(t *testing.T) {
	t.Parallel()
	e := newUIEnv(t, uiOpts{dialect: testenv.SQLite})
	for _, c := range []struct {
		path  string
		form  url.Values
		field string
	}{
		{"/tasks/new", url.Values{"body": {"SELECT 1"}, "transactional": {"maybe"}}, "transactional"},
		{"/tasks/new", url.Values{"body": {"SELECT 1"}, "chain": {"c"}, "continue_on_failure": {"yes"}}, "continue_on_failure"},
		{"/schedules/new", url.Values{"name": {"s"}, "cron": {"@daily"}, "body": {"SELECT 1"}, "transactional": {"1"}}, "transactional"},
		{"/schedules/new", url.Values{"name": {"s"}, "cron": {"@daily"}, "body": {"SELECT 1"}, "paused": {"on"}}, "paused"},
	} {
		p := e.post(c.path, c.form)
		require.Equal(t, http.StatusBadRequest, p.status, "%s %v: %.300s", c.path, c.form, p.body)
		require.Contains(t, p.body, c.field)
		require.Contains(t, p.body, "a checkbox sends true")
	}
	tasks, err := e.store.List(e.ctx, queue.ListParams{Limit: 1})
	require.NoError(t, err)
	require.Empty(t, tasks, "nothing was enqueued")
	schedules, err := e.store.Schedules(e.ctx)
	require.NoError(t, err)
	require.Empty(t, schedules, "no schedule was created")
}
