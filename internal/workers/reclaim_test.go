package workers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
)

// One reclaim takes back every expired lease a dead node left, not one batch:
// a node that froze or was cut off holds the tasks it claimed ahead besides
// its running ones, hundreds behind a backlog, and a batch of 100 every third
// of the lease handed them back over several rounds (docs/RELIABILITY.md, "A
// partitioned node").
func TestOneReclaimTakesBackEveryExpiredLease(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, e env) {
		const n = 2*reclaimBatch + 50
		tasks := make([]queue.NewTask, n)
		for i := range tasks {
			tasks[i] = queue.NewTask{Queue: "reclaim-all", Body: "SELECT 1"}
		}
		ids := e.enqueue(t, tasks...)
		// A node claims them all, then dies: their leases run out.
		for claimed := 0; claimed < n; {
			got, err := e.store.Claim(e.ctx, queue.ClaimParams{Queue: "reclaim-all", Owner: "dead/reclaim-all", Limit: n - claimed,
				LeaseDuration: 100 * time.Millisecond})
			require.NoError(t, err)
			require.NotEmpty(t, got, "claimed %d of %d", claimed, n)
			claimed += len(got)
		}
		time.Sleep(300 * time.Millisecond)

		woken := 0
		r := &reclaimer{store: e.store, wake: func() { woken++ }, log: testLogger(t)}
		r.reclaim(e.ctx)
		for _, id := range ids {
			task, err := e.store.Get(e.ctx, id)
			require.NoError(t, err)
			require.Equal(t, queue.StatePending, task.State, "task %d is pending again after one reclaim", id)
		}
		require.Equal(t, 3, woken, "the pools were woken after each batch")
	})
}
