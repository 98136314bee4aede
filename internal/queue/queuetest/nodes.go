package queuetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
)

var nodeTests = map[string]func(*testing.T, Harness){
	"register_heartbeat_stop_and_gone": func(t *testing.T, h Harness) {
		b := setup(t, h)
		require.NoError(t, b.s.RegisterNode(b.ctx, queue.Node{ID: "n1", Hostname: "h1", PID: 11, Version: "v1", Info: `{"pools":1}`}))
		require.NoError(t, b.s.RegisterNode(b.ctx, queue.Node{ID: "n2", Hostname: "h2", PID: 22, Version: "v1"}))
		nodes, err := b.s.Nodes(b.ctx, time.Hour)
		require.NoError(t, err)
		require.Len(t, nodes, 2)
		byID := map[string]queue.Node{}
		for _, n := range nodes {
			byID[n.ID] = n
			require.False(t, n.Gone, "node %s just registered", n.ID)
			require.WithinDuration(t, time.Now(), n.HeartbeatAt, time.Minute, "heartbeat_at is the database's now")
			require.True(t, n.StoppedAt.IsZero())
		}
		require.Equal(t, "h1", byID["n1"].Hostname)
		require.Equal(t, 11, byID["n1"].PID)
		require.Equal(t, "v1", byID["n1"].Version)
		require.JSONEq(t, `{"pools":1}`, byID["n1"].Info)
		require.JSONEq(t, `{}`, byID["n2"].Info, "a node without info stores an empty object")

		time.Sleep(20 * time.Millisecond)
		require.NoError(t, b.s.HeartbeatNode(b.ctx, "n2", `{"pools":2}`))
		nodes, err = b.s.Nodes(b.ctx, time.Hour)
		require.NoError(t, err)
		require.Equal(t, "n2", nodes[0].ID, "newest heartbeat first")
		require.JSONEq(t, `{"pools":2}`, nodes[0].Info)

		require.NoError(t, b.s.StopNode(b.ctx, "n1"))
		nodes, err = b.s.Nodes(b.ctx, time.Hour)
		require.NoError(t, err)
		for _, n := range nodes {
			require.Equal(t, n.ID == "n1", n.Gone, "only the stopped node is gone")
			require.Equal(t, n.ID == "n1", !n.StoppedAt.IsZero())
		}
		// A node silent for longer than goneAfter is gone too.
		time.Sleep(50 * time.Millisecond)
		nodes, err = b.s.Nodes(b.ctx, 10*time.Millisecond)
		require.NoError(t, err)
		for _, n := range nodes {
			require.True(t, n.Gone, "node %s has been silent longer than goneAfter", n.ID)
		}
		// Registering again (a restart with the same id) brings it back.
		require.NoError(t, b.s.RegisterNode(b.ctx, queue.Node{ID: "n1", Hostname: "h1b", PID: 12}))
		nodes, err = b.s.Nodes(b.ctx, time.Hour)
		require.NoError(t, err)
		for _, n := range nodes {
			if n.ID == "n1" {
				require.False(t, n.Gone)
				require.True(t, n.StoppedAt.IsZero())
				require.Equal(t, "h1b", n.Hostname)
			}
		}
	},
	"purge_deletes_nodes_gone_before_the_cutoff": func(t *testing.T, h Harness) {
		b := setup(t, h)
		for _, id := range []string{"silent", "stopped"} {
			require.NoError(t, b.s.RegisterNode(b.ctx, queue.Node{ID: id}))
		}
		require.NoError(t, b.s.StopNode(b.ctx, "stopped"))
		// The nodes' times are the database's; margins on both sides of the
		// cutoff keep the test clear of the clocks' resolution.
		time.Sleep(300 * time.Millisecond)
		cutoff := time.Now()
		time.Sleep(300 * time.Millisecond)
		for _, id := range []string{"live", "stopped-since"} {
			require.NoError(t, b.s.RegisterNode(b.ctx, queue.Node{ID: id}))
		}
		require.NoError(t, b.s.StopNode(b.ctx, "stopped-since"))

		n, err := b.s.PurgeNodes(b.ctx, cutoff)
		require.NoError(t, err)
		require.Equal(t, int64(2), n, "the node silent since before the cutoff and the one stopped before it")
		nodes, err := b.s.Nodes(b.ctx, time.Hour)
		require.NoError(t, err)
		var ids []string
		for _, nd := range nodes {
			ids = append(ids, nd.ID)
		}
		require.ElementsMatch(t, []string{"live", "stopped-since"}, ids, "a node stopped after the cutoff stays listed, gone")
		n, err = b.s.PurgeNodes(b.ctx, cutoff)
		require.NoError(t, err)
		require.Zero(t, n, "nothing more to purge")
	},
	"heartbeat_of_an_unknown_node_fails": func(t *testing.T, h Harness) {
		b := setup(t, h)
		require.ErrorIs(t, b.s.HeartbeatNode(b.ctx, "nobody", "{}"), queue.ErrNotFound)
	},
}
