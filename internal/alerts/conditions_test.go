package alerts_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/alerts"
	"readpast/internal/queue"
	"readpast/internal/testenv"
)

// A node that stops heartbeating without stopping, and a task that runs
// too long, each notify once; the node recovers when it heartbeats again.
func TestSilentNodeAndLongRunningTask(t *testing.T) {
	e := testenv.New(t, testenv.SQLite)
	rc := startReceiver(t, hookSecret, 0)
	runAlerts(t, e.Store, fmt.Sprintf(`{"operators": [{"name": "ops", "webhooks": [{"name": "h", "url": "%s/x", "secret": %q}]}],
		"rules": [{"name": "silent", "kind": "node_silent", "threshold": "300ms", "recovery": true, "operators": ["ops"]},
		          {"name": "long", "kind": "task_long_running", "threshold": "300ms", "queues": ["etl"], "operators": ["ops"]}]}`, rc.URL, hookSecret),
		"n1", &syncBuffer{}, alerts.Options{CheckEvery: 100 * time.Millisecond})
	require.NoError(t, e.Store.RegisterNode(e.Ctx, queue.Node{ID: "db-agent-2", Hostname: "host2", PID: 7}))
	e.Enqueue(t, queue.NewTask{Queue: "etl", Body: "x"})
	got, err := e.Store.Claim(e.Ctx, queue.ClaimParams{Queue: "etl", Owner: "db-agent-2/w1", Limit: 1, LeaseDuration: time.Hour})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(rc.accepted()) == 2 }, 20*time.Second, 20*time.Millisecond)
	time.Sleep(400 * time.Millisecond)
	require.Len(t, rc.accepted(), 2, "each once")
	byRule := map[string]alerts.Message{}
	for _, m := range rc.messages(t, "/x") {
		byRule[m.Rule] = m
	}
	require.Contains(t, byRule["silent"].Text, "node db-agent-2 (host2) has not heartbeated since")
	require.Contains(t, byRule["long"].Text, fmt.Sprintf("task %d in queue etl has been running for", got[0].ID))
	require.NoError(t, e.Store.HeartbeatNode(e.Ctx, "db-agent-2", "{}"))
	require.Eventually(t, func() bool { return len(rc.accepted()) == 3 }, 20*time.Second, 20*time.Millisecond)
	last := rc.messages(t, "/x")[2]
	require.Equal(t, "recovered", last.State)
	require.Equal(t, "silent", last.Rule)
}
