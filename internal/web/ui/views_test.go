package ui

import (
	"fmt"
	"log/slog"
	"net/url"
	"testing"
	"time"

	"readpast/internal/queue"
	"readpast/internal/schedule"
	"readpast/internal/testenv"
	"readpast/internal/workers"
	"readpast/web/templates"

	"github.com/stretchr/testify/require"
)

// The rows and sections the websocket sends show a body that is markup as
// text, as the pages do.
func TestLiveRowsEscapeScriptBody(t *testing.T) {
	t.Parallel()
	testenv.ForEachDialect(t, func(t *testing.T, e *testenv.Env) {
		evil := `<script>alert(1)</script>`
		id := e.Enqueue(t, queue.NewTask{Body: "SELECT '" + evil + "'", Group: `<b>g</b>`})[0]
		_, err := schedule.Editor{Store: e.Store}.CreateSchedule(e.Ctx, queue.ScheduleDef{Name: "s", Cron: "@daily",
			Task: queue.ScheduleTask{Body: "SELECT '" + evil + "'", Group: `<b>g</b>`}}, "test")
		require.NoError(t, err)
		u := newViews(e.Store, nil, time.Second, slog.New(slog.DiscardHandler))
		for _, v := range []url.Values{{"view": {"tasks"}}, {"view": {"task"}, "id": {fmt.Sprint(id)}}, {"view": {"schedules"}}} {
			view, err := parseLiveView(v, true)
			require.NoError(t, err)
			st, err := u.loadView(e.Ctx, view, shared{})
			require.NoError(t, err)
			require.NotEmpty(t, len(st.rows)+len(st.sections), "%v shows something", v)
			for _, html := range st.rows {
				require.NotContains(t, html, evil)
				require.Contains(t, html, "&lt;script&gt;")
			}
			for _, html := range st.sections {
				require.NotContains(t, html, evil)
				require.NotContains(t, html, "<b>g</b>")
			}
		}
	})
}

// The nodes page shows what each busy worker runs, with its target session
// id (the SPID on SQL Server).
func TestNodesShowSessions(t *testing.T) {
	t.Parallel()
	u := newViews(nil, nil, time.Second, slog.New(slog.DiscardHandler)) // lays out nodes read already: no store
	started := time.Now().Add(-75 * time.Second)
	info := workers.NodeInfo{Pools: []workers.PoolInfo{{Queue: "etl", Size: 4, Running: 1,
		Busy: []workers.WorkerInfo{{Worker: "etl-w2", Queue: "etl", TaskID: 42, SessionID: "57", StartedAt: started}}}}}
	views := u.nodeViewsOf([]clusterNode{
		{Node: queue.Node{ID: "sql-node-b", Hostname: "db02", PID: 7, Version: "1.0", HeartbeatAt: time.Now(), StoppedAt: time.Now()}},
		{Node: queue.Node{ID: "sql-node-a", Hostname: "db01", PID: 4242, Version: "1.0", HeartbeatAt: time.Now()}, Info: info},
	})
	require.Equal(t, "sql-node-a", views[0].ID, "live nodes come before stopped ones")
	require.Equal(t, "stopped", views[1].Status)
	html, err := renderString(templates.NodeList(views))
	require.NoError(t, err)
	for _, want := range []string{"etl-w2", `href="/tasks/42"`, ">57<", "1m15s", "db01 · pid 4242 · 1.0"} {
		require.Contains(t, html, want)
	}
}
