package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/queue/open"
	"readpast/internal/workers"
)

// `--workers 0` runs no worker of a queue that sets none, as its help says
// (0 to 1000): the node's pool for such a queue has size 0 and its task stays
// pending. It used to run 4, the default, 0 being taken for "unset" (issue 25).
func TestServeWorkersZeroRunsNone(t *testing.T) {
	t.Parallel()
	dsn := filepath.Join(t.TempDir(), "readpast.db")
	srv := startServe(t, dsn, "--workers", "0", "--poll", "50ms", "--lease", "1s", "--grace", "1s")
	ctx := context.Background()
	s, err := open.Store(ctx, dsn, queue.Options{})
	require.NoError(t, err)
	defer s.Close()
	ids, err := s.Enqueue(ctx, []queue.NewTask{{Body: "SELECT 1"}})
	require.NoError(t, err)

	// The node's heartbeat carries its pools; wait until it has the queue's.
	var pool *workers.PoolInfo
	require.Eventually(t, func() bool {
		nodes, err := s.Nodes(ctx, time.Minute)
		require.NoError(t, err)
		for _, n := range nodes {
			var info workers.NodeInfo
			if n.Gone || json.Unmarshal([]byte(n.Info), &info) != nil {
				continue
			}
			for _, p := range info.Pools {
				if p.Queue == "default" {
					pool = &p
					return true
				}
			}
		}
		return false
	}, 20*time.Second, 20*time.Millisecond, "the node reports a pool for the default queue; logs:\n%s", srv.logs.String())
	require.Zero(t, pool.Size, "--workers 0 must run no workers; the node runs %d", pool.Size)
	task, err := s.Get(ctx, ids[0].ID)
	require.NoError(t, err)
	require.Equal(t, queue.StatePending, task.State, "no worker may run the task")
	require.Equal(t, 0, srv.stop(), "logs:\n%s", srv.logs.String())
}
