package ui

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/workers"
	"readpast/web/templates"
)

// A stopped node drained its workers before it stopped: the info of its last
// heartbeat may still list a task it was running then, but the nodes page
// shows none running, and no timer counting for it. A gone node's workers are
// what it last said, and their time stops at its last heartbeat.
func TestNodesStoppedShowsNoWorkerRunning(t *testing.T) {
	t.Parallel()
	now := time.Now()
	u := newViews(nil, nil, time.Second, slog.New(slog.DiscardHandler))
	u.now = func() time.Time { return now }
	started := now.Add(-10 * time.Minute)
	lastBeat := now.Add(-8 * time.Minute)
	info := func(task int64) workers.NodeInfo {
		return workers.NodeInfo{Pools: []workers.PoolInfo{{Queue: "etl", Size: 2, Running: 1,
			Busy: []workers.WorkerInfo{{Worker: "etl-w1", Queue: "etl", TaskID: task, StartedAt: started}}}}}
	}
	nodes := []clusterNode{
		{Node: queue.Node{ID: "stopped-node", HeartbeatAt: lastBeat, StoppedAt: lastBeat.Add(time.Second)}, Info: info(7)},
		{Node: queue.Node{ID: "gone-node", HeartbeatAt: lastBeat, Gone: true}, Info: info(8)},
	}
	views := u.nodeViewsOf(nodes)
	byID := map[string]templates.NodeView{}
	for _, v := range views {
		byID[v.ID] = v
	}
	stopped := byID["stopped-node"]
	require.Equal(t, "stopped", stopped.Status)
	require.Empty(t, stopped.Busy, "a stopped node runs nothing")
	for _, p := range stopped.Pools {
		require.Zero(t, p.Running, "a stopped node's pool %s has no busy worker", p.Queue)
	}
	gone := byID["gone-node"]
	require.Len(t, gone.Busy, 1, "a gone node's last known work is shown")
	require.Contains(t, gone.Busy[0].For, "2m00s", "its time stops at the last heartbeat")

	u.now = func() time.Time { return now.Add(time.Hour) }
	later := u.nodeViewsOf(nodes)
	for _, v := range later {
		if v.ID == "gone-node" {
			require.Equal(t, gone.Busy[0].For, v.Busy[0].For, "a gone node's timer does not count")
		}
	}
	html, err := renderString(templates.NodeList(views))
	require.NoError(t, err)
	require.NotContains(t, html, `href="/tasks/7"`, "the stopped node's finished task is not shown running")
}
