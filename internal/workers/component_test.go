package workers

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
)

// Every background component keeps the one contract: Stop before Start does
// nothing, Start returns at once, Stop returns once its goroutine ended, and a
// second Stop does nothing.
func TestComponentsStopTwiceAndBeforeStart(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, e env) {
		n, err := New(e.store, e.target, Config{NodeID: "c", Lease: 900 * time.Millisecond, Logger: testLogger(t)})
		require.NoError(t, err)
		components := map[string]component{"finisher": n.finisher, "heartbeater": n.heartbeater, "settings": n.settings,
			"reclaimer": n.reclaimer, "listener": n.listener, "retention": n.retention}
		for name, c := range components {
			stopped := make(chan struct{})
			go func() {
				defer close(stopped)
				c.Stop()
				c.Start(context.Background())
				c.Start(context.Background())
				time.Sleep(10 * time.Millisecond)
				c.Stop()
				c.Stop()
			}()
			select {
			case <-stopped:
			case <-time.After(10 * time.Second):
				t.Fatalf("the %s did not stop within 10 s", name)
			}
		}
	})
}

// The node runs the retention purge: finished tasks and their log rows past
// their ages go, tasks that have not finished stay.
func TestNodePurgesFinishedTasksPastRetention(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, e env) {
		_, err := e.store.UpdateQueue(e.ctx, "held", queue.QueueUpdate{Paused: boolp(true), Actor: "test"})
		require.NoError(t, err)
		ids := e.enqueue(t, queue.NewTask{Body: "SELECT 1", Queue: "done"}, queue.NewTask{Body: "SELECT 1", Queue: "held"})
		e.startNode(t, Config{NodeID: "n1", Poll: 50 * time.Millisecond, LogRetention: time.Millisecond,
			TaskRetention: time.Millisecond, RetentionEvery: 100 * time.Millisecond})
		require.Eventually(t, func() bool {
			_, err := e.store.Get(e.ctx, ids[0])
			return err != nil
		}, 20*time.Second, 20*time.Millisecond, "the finished task is purged")
		_, err = e.store.Get(e.ctx, ids[0])
		require.ErrorIs(t, err, queue.ErrNotFound)
		recs, err := e.store.Attempts(e.ctx, queue.LogQuery{TaskID: ids[0], Limit: 10})
		require.NoError(t, err)
		require.Empty(t, recs, "its log rows are purged")
		require.Equal(t, queue.StatePending, e.get(t, ids[1]).State, "a task that has not finished stays")
	})
}
