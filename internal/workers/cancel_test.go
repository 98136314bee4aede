package workers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
)

// A task past its timeout ends timed_out within seconds, and the server no
// longer runs its statement.
func TestTimeoutCancelsTheStatementOnTheServer(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, e env) {
		id := e.enqueue(t, queue.NewTask{Body: sleepBody(t, e.dialect, 60*time.Second), Queue: "slow", Timeout: time.Second, MaxAttempts: 1})[0]
		e.startNode(t, Config{NodeID: "n1", Poll: 50 * time.Millisecond})
		start := time.Now()
		task := e.waitState(t, id, queue.StateFailed, 15*time.Second)
		t.Logf("a 60 s statement with a 1 s timeout ended after %s", time.Since(start).Round(time.Millisecond))
		recs, err := e.store.TaskAttempts(e.ctx, id)
		require.NoError(t, err)
		require.Equal(t, queue.OutcomeTimedOut, recs[0].Outcome)
		require.Contains(t, task.LastError, "timeout")
		if e.dialect == "postgres" {
			require.Eventually(t, func() bool { return serverSessionsRunning(t, e, "pg_sleep(60") == 0 }, 3*time.Second, 50*time.Millisecond,
				"the server must not still run the timed-out statement")
		}
	})
}

// An operator's cancel stops a running statement: on this node at once, on
// another node at its next heartbeat.
func TestCancelStopsARunningTask(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, e env) {
		ids := e.enqueue(t,
			queue.NewTask{Body: sleepBody(t, e.dialect, 60*time.Second), Queue: "c1"},
			queue.NewTask{Body: sleepBody(t, e.dialect, 60*time.Second), Queue: "c2"})
		n, _ := e.startNode(t, Config{NodeID: "n1", Poll: 50 * time.Millisecond, Lease: 900 * time.Millisecond})
		e.waitState(t, ids[0], queue.StateRunning, 10*time.Second)
		e.waitState(t, ids[1], queue.StateRunning, 10*time.Second)

		// Through this node, as the dashboard does.
		st, err := e.store.Cancel(e.ctx, ids[0], "op")
		require.NoError(t, err)
		require.Equal(t, queue.StateRunning, st)
		require.True(t, n.CancelTask(ids[0]))
		e.waitState(t, ids[0], queue.StateCancelled, 5*time.Second)

		// Recorded elsewhere: the heartbeat (every 300 ms here) carries it.
		_, err = e.store.Cancel(e.ctx, ids[1], "op")
		require.NoError(t, err)
		e.waitState(t, ids[1], queue.StateCancelled, 5*time.Second)
		recs, err := e.store.TaskAttempts(e.ctx, ids[1])
		require.NoError(t, err)
		require.Equal(t, queue.OutcomeCancelled, recs[0].Outcome)
	})
}

// A stop waits for short tasks, then releases long ones so they run again.
func TestGracefulStopReleasesWhatIsLeft(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, e env) {
		ids := e.enqueue(t,
			queue.NewTask{Body: sleepBody(t, e.dialect, 60*time.Second), Queue: "g", MaxAttempts: 1},
			queue.NewTask{Body: sleepBody(t, e.dialect, 200*time.Millisecond), Queue: "g"})
		_, stop := e.startNode(t, Config{NodeID: "n1", Poll: 50 * time.Millisecond, Grace: 1500 * time.Millisecond})
		e.waitState(t, ids[0], queue.StateRunning, 10*time.Second)
		e.waitState(t, ids[1], queue.StateRunning, 10*time.Second)
		start := time.Now()
		stop()
		t.Logf("stop took %s with a 1.5 s grace period", time.Since(start).Round(time.Millisecond))
		e.waitState(t, ids[1], queue.StateSucceeded, time.Second)
		released := e.waitState(t, ids[0], queue.StatePending, time.Second)
		require.Empty(t, released.Why, "a released task runs again at once, even with no attempts left")
		recs, err := e.store.TaskAttempts(e.ctx, ids[0])
		require.NoError(t, err)
		require.Equal(t, queue.OutcomeCancelled, recs[0].Outcome)
		require.Equal(t, errShutdown.Error(), recs[0].Error)
		nodes, err := e.store.Nodes(e.ctx, time.Minute)
		require.NoError(t, err)
		require.True(t, nodes[0].Gone, "a stopped node is shown as gone")
	})
}
