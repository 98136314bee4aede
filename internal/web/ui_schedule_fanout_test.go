package web

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"readpast/internal/testenv"
)

// The schedule form fans a schedule out: targets and servers at once are
// kept, shown on the schedules page and in the edit form, and cleared by an
// edit; a limit that is not a number of servers comes back next to its field.
func TestScheduleFormFanOut(t *testing.T) {
	t.Parallel()
	e := newUIEnv(t, uiOpts{dialect: testenv.SQLite})
	form := e.get("/schedules/new")
	require.Contains(t, form.body, `name="targets"`)
	require.Contains(t, form.body, `name="fanout_limit"`)

	f := nightlyForm("save")
	f.Set("targets", "tag:prod, nosuch")
	bad := e.post("/schedules/new", f)
	require.Equal(t, http.StatusUnprocessableEntity, bad.status, bad.body)
	require.True(t, fieldErrorAfter(bad.body, "targets", "nosuch"), "a name no node has is refused, as a target is: %s", bad.body)
	f.Set("targets", "tag:prod, store")
	f.Set("fanout_limit", "two")
	bad = e.post("/schedules/new", f)
	require.Equal(t, http.StatusUnprocessableEntity, bad.status, bad.body)
	require.True(t, fieldErrorAfter(bad.body, "fanout_limit", "is not a number of servers"), bad.body)
	f.Set("target", "store")
	f.Set("fanout_limit", "2")
	bad = e.post("/schedules/new", f)
	require.Equal(t, http.StatusUnprocessableEntity, bad.status, bad.body)
	require.True(t, fieldErrorAfter(bad.body, "target", "both set"), bad.body)

	f.Del("target")
	p := e.post("/schedules/new", f)
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	s, err := e.store.GetSchedule(e.ctx, "nightly-index-rebuild")
	require.NoError(t, err)
	require.Equal(t, []string{"tag:prod", "store"}, s.Task.Targets)
	require.Equal(t, 2, s.Task.FanOutLimit)
	require.Contains(t, e.get("/schedules").body, "fans out to tag:prod, store, 2 at once")
	edit := e.get("/schedules/nightly-index-rebuild/edit")
	require.Contains(t, edit.body, `value="tag:prod, store"`)
	require.Contains(t, edit.body, `name="fanout_limit" value="2"`)

	f.Del("name")
	f.Set("targets", "")
	f.Set("fanout_limit", "")
	f.Set("target", "store")
	p = e.post("/schedules/nightly-index-rebuild/edit", f)
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	s, err = e.store.GetSchedule(e.ctx, "nightly-index-rebuild")
	require.NoError(t, err)
	require.Empty(t, s.Task.Targets)
	require.Equal(t, "store", s.Task.Target)
	require.Contains(t, e.get("/schedules").body, "on store")
}
