package workers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
)

// A node with Stats on accounts for every body, claim and finish of a drain,
// and its slots' time adds up to no more than the slots had.
func TestDrainStatsAccountForTheSlotsTime(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, e env) {
		const n = 200
		tasks := make([]queue.NewTask, n)
		for i := range tasks {
			tasks[i] = queue.NewTask{Body: "SELECT 1", Queue: "counted"}
		}
		ids := e.enqueue(t, tasks...)
		stats := &DrainStats{}
		workers := 4
		began := time.Now()
		_, stop := e.startNode(t, Config{NodeID: "n1", Poll: 50 * time.Millisecond, DefaultWorkers: &workers, Stats: stats})
		e.waitAll(t, ids, queue.StateSucceeded, 30*time.Second)
		stop()
		slots := int64(workers) * int64(time.Since(began))

		require.Equal(t, int64(n), stats.Bodies.Load())
		require.Equal(t, int64(n), stats.ClaimedTasks.Load())
		require.Equal(t, int64(n), stats.FinishEnds.Load())
		require.Positive(t, stats.Claims.Load())
		require.Positive(t, stats.FinishBatches.Load())
		require.Positive(t, stats.Body.Load())
		accounted := stats.Body.Load() + stats.Scheduling.Load() + stats.After.Load() +
			stats.IdleClaiming.Load() + stats.IdleEndingFull.Load() + stats.IdleOther.Load()
		require.LessOrEqual(t, accounted, slots, "no slot time is counted twice")
		require.Positive(t, stats.IdleClaiming.Load()+stats.IdleOther.Load(), "the slots waited for the first claim")
	})
}
