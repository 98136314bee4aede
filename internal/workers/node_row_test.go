package workers

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
)

// A node whose row retention deleted (silent for longer than
// queue.NodesGoneKept: a machine suspended for a week) registers again at its
// next heartbeat, and the dashboard lists it again.
func TestNodeRegistersAgainAfterItsRowWasPurged(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, e env) {
		e.startNode(t, Config{NodeID: "sleeper", Lease: 900 * time.Millisecond}) // a heartbeat every 300 ms
		listed := func() bool {
			nodes, err := e.store.Nodes(e.ctx, time.Hour)
			require.NoError(t, err)
			return slices.ContainsFunc(nodes, func(n queue.Node) bool { return n.ID == "sleeper" })
		}
		require.True(t, listed(), "a running node is listed")
		// Every row's last heartbeat is before an hour from now: the purge
		// takes the running node's row as if it had been silent for a week.
		n, err := e.store.PurgeNodes(e.ctx, time.Now().Add(time.Hour))
		require.NoError(t, err)
		require.Positive(t, n)
		require.False(t, listed(), "the purge deleted the node's row")
		require.Eventually(t, listed, e.Slower(t, 3*time.Second), 50*time.Millisecond,
			"the node registers again at its next heartbeat")
	})
}
