package workers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
)

// With a 5 s poll, only a wake-up explains a start within a second.
func TestEnqueueWakesAnIdleWorker(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, e env) {
		_, err := e.store.UpdateQueue(e.ctx, "w", queue.QueueUpdate{Workers: intp(2), Actor: "test"})
		require.NoError(t, err)
		n, _ := e.startNode(t, Config{NodeID: "n1", Poll: 5 * time.Second})
		time.Sleep(300 * time.Millisecond) // the first poll has happened; the pool is idle
		start := time.Now()
		id := e.enqueue(t, queue.NewTask{Body: "SELECT 1", Queue: "w"})[0]
		n.Wake("w")
		task := e.waitState(t, id, queue.StateSucceeded, time.Second)
		t.Logf("enqueue to finish with a wake-up: %s", task.FinishedAt.Sub(start).Round(time.Microsecond))
	})
}

// An idle node with default settings sends a bounded number of queries:
// one claim per queue per poll plus per-node settings, heartbeat and reclaim.
func TestIdleNodeQueryRate(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, e env) {
		for _, q := range []string{"q1", "q2", "q3"} {
			_, err := e.store.UpdateQueue(e.ctx, q, queue.QueueUpdate{Workers: intp(4), Actor: "test"})
			require.NoError(t, err)
		}
		var calls *StoreCalls
		e.store, calls = CountCalls(e.store)
		e.startNode(t, Config{NodeID: "idle"})
		time.Sleep(500 * time.Millisecond)
		calls.Calls.Store(0)
		const window = 4 * time.Second
		time.Sleep(window)
		perSecond := float64(calls.Calls.Load()) / window.Seconds()
		t.Logf("idle node with 3 queues: %.2f queries/s (%.2f per queue)", perSecond, perSecond/3)
		require.LessOrEqual(t, perSecond/3, 2.0, "an idle node sends at most 2 queries per second per queue")
	})
}
