package workers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
)

// A transactional task that is stopped ends the way any other task stopped
// the same way ends (one rule, outcome in run.go), and its effect is rolled
// back: a timeout is a timed_out attempt, an operator's cancel a cancelled
// task, a shutdown a release that lets it run again.
func TestTransactionalTaskEndsLikeAnyOther(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, e env) {
		e.Exec(t, "CREATE TABLE fx (tag varchar(20))")
		long := func(tag string) string {
			return "INSERT INTO fx VALUES ('" + tag + "')\nGO\n" + sleepBody(t, e.dialect, time.Minute)
		}
		effects := func(tag string) int64 { return e.QueryInt(t, "SELECT count(*) FROM fx WHERE tag = '"+tag+"'") }
		cfg := Config{NodeID: "n1", Poll: 50 * time.Millisecond, Lease: 3 * time.Second, Grace: time.Second, TargetIsStore: true}

		timedOut := e.enqueue(t, queue.NewTask{Body: long("timeout"), Queue: "tx", Transactional: true, Timeout: time.Second, MaxAttempts: 1})[0]
		n, stop := e.startNode(t, cfg)
		task := e.waitState(t, timedOut, queue.StateFailed, 20*time.Second)
		require.Contains(t, task.LastError, "timeout")
		requireAttempts(t, e, timedOut, queue.OutcomeTimedOut)
		require.Zero(t, effects("timeout"))

		cancelled := e.enqueue(t, queue.NewTask{Body: long("cancel"), Queue: "tx", Transactional: true})[0]
		e.waitState(t, cancelled, queue.StateRunning, 20*time.Second)
		time.Sleep(300 * time.Millisecond) // the effect is written
		// As the dashboard does: stop it here first (on SQLite the store's
		// writer is the body's until it stops), then record who cancelled.
		require.True(t, n.CancelTask(cancelled))
		if _, err := e.store.Cancel(e.ctx, cancelled, "op"); err != nil {
			require.ErrorIs(t, err, queue.ErrInvalidState, "the task may have ended cancelled already")
		}
		e.waitState(t, cancelled, queue.StateCancelled, 10*time.Second)
		requireAttempts(t, e, cancelled, queue.OutcomeCancelled)
		require.Zero(t, effects("cancel"))

		released := e.enqueue(t, queue.NewTask{Body: long("shutdown"), Queue: "tx", Transactional: true, MaxAttempts: 1})[0]
		e.waitState(t, released, queue.StateRunning, 20*time.Second)
		time.Sleep(300 * time.Millisecond)
		start := time.Now()
		stop()
		t.Logf("stop took %s with a 1 s grace period", time.Since(start).Round(time.Millisecond))
		task = e.waitState(t, released, queue.StatePending, time.Second)
		require.Empty(t, task.Why, "a released task runs again at once, even with no attempts left")
		recs := requireAttempts(t, e, released, queue.OutcomeCancelled)
		require.Equal(t, errShutdown.Error(), recs[0].Error)
		require.Zero(t, effects("shutdown"))
	})
}

// requireAttempts checks the task's log holds one attempt per outcome given,
// in order, and returns it.
func requireAttempts(t *testing.T, e env, id int64, want ...queue.Outcome) []queue.AttemptRecord {
	t.Helper()
	recs, err := e.store.TaskAttempts(e.ctx, id)
	require.NoError(t, err)
	var got []queue.Outcome
	for _, r := range recs {
		got = append(got, r.Outcome)
	}
	require.Equal(t, want, got, "the attempts of task %d", id)
	return recs
}
