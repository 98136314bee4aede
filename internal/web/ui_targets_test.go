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

// The enqueue form fans a body out to the targets it names: one task per
// target in a group of their own, whose limit is the form's servers at
// once; the fan-out's page lists them and counts them; a name no node
// serves is shown next to its field.
func TestEnqueueFormFansOut(t *testing.T) {
	t.Parallel()
	e := newUIEnv(t, uiOpts{dialect: testenv.SQLite, node: true})
	form := e.get("/tasks/new")
	require.Equal(t, http.StatusOK, form.status)
	require.Contains(t, form.body, `name="targets"`)

	p := e.post("/tasks/new", url.Values{"body": {"SELECT 1"}, "targets": {"store, default"}, "fanout_limit": {"1"}})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	require.True(t, strings.HasPrefix(p.location, "/fanouts/fanout-"), p.location)
	group := strings.TrimPrefix(p.location, "/fanouts/")
	tasks, err := e.store.List(e.ctx, queue.ListParams{Group: group})
	require.NoError(t, err)
	require.Len(t, tasks, 2)
	got := map[string]bool{}
	for _, task := range tasks {
		got[task.Target] = true
	}
	require.Equal(t, map[string]bool{"store": true, "default": true}, got)
	gs, err := e.store.Groups(e.ctx)
	require.NoError(t, err)
	for _, g := range gs {
		if g.Name == group {
			require.Equal(t, 1, g.MaxRunning, "one server at once")
		}
	}
	page := e.get(p.location)
	require.Equal(t, http.StatusOK, page.status)
	require.Contains(t, page.body, "of 2")
	require.Contains(t, page.body, ">store<")

	bad := e.post("/tasks/new", url.Values{"body": {"SELECT 1"}, "targets": {"nosuch"}})
	require.Equal(t, http.StatusUnprocessableEntity, bad.status)
	require.Contains(t, bad.body, "nosuch")

	targets := e.get("/targets")
	require.Equal(t, http.StatusOK, targets.status)
	require.Contains(t, targets.body, ">default<")
}
