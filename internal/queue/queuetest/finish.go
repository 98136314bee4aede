package queuetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
)

var finishTests = map[string]func(*testing.T, Harness){
	"success_is_final_and_logged": func(t *testing.T, h Harness) {
		b := setup(t, h)
		id := b.enqueue(t, queue.NewTask{Body: "SELECT 1", Queue: "q1"})[0]
		got := b.claim(t, "q1", 1)
		a := attempt(got[0], queue.OutcomeSucceeded, "")
		a.Messages = "hello from PRINT"
		a.RowsAffected = 7
		res, err := b.s.Finish(b.ctx, []queue.Attempt{a})
		require.NoError(t, err)
		require.Equal(t, queue.StateSucceeded, res[0].State)
		task := b.get(t, id)
		require.Equal(t, queue.StateSucceeded, task.State)
		require.False(t, task.FinishedAt.IsZero())
		require.False(t, task.StartedAt.IsZero())
		require.Zero(t, task.LeaseToken, "a finished task holds no lease")
		recs, err := b.s.TaskAttempts(b.ctx, id)
		require.NoError(t, err)
		require.Len(t, recs, 1)
		r := recs[0]
		require.Equal(t, id, r.TaskID)
		require.Equal(t, 1, r.Attempt)
		require.Equal(t, "q1", r.Queue)
		require.Equal(t, "node-t", r.Node)
		require.Equal(t, "w1", r.Worker)
		require.Equal(t, "42", r.SessionID)
		require.Equal(t, queue.OutcomeSucceeded, r.Outcome)
		require.Equal(t, int64(7), r.RowsAffected)
		require.Equal(t, "hello from PRINT", r.Messages)
		require.InDelta(t, 10*time.Millisecond, r.Duration, float64(5*time.Millisecond))
		_, err = b.s.Finish(b.ctx, []queue.Attempt{a})
		require.NoError(t, err)
		again, err := b.s.Finish(b.ctx, []queue.Attempt{a})
		require.NoError(t, err)
		require.ErrorIs(t, again[0].Err, queue.ErrLeaseLost, "finishing twice must be refused")
	},
	"failure_retries_with_backoff_then_fails": func(t *testing.T, h Harness) {
		b := setup(t, h)
		id := b.enqueue(t, queue.NewTask{Body: "SELECT 1", MaxAttempts: 2})[0]
		got := b.claim(t, queue.DefaultQueue, 1)
		sent := time.Now()
		res := b.finish(t, got[0], queue.OutcomeTimedOut, "timeout after 1s")
		rtt := time.Since(sent)
		require.Equal(t, queue.StatePending, res.State)
		task := b.get(t, id)
		require.Equal(t, "timeout after 1s", task.LastError)
		require.Equal(t, res.Retry.UnixMicro(), task.AvailableAt.UnixMicro(), "the finish says when the retry is due")
		// Measured from the finish, not from now: a slow server's round
		// trips (Babelfish under load) must not eat the back-off.
		wait := task.AvailableAt.Sub(sent)
		require.True(t, wait > time.Second && wait < 3*time.Second+rtt, "first retry waits 2 s ± 25 %%, got %s (finish took %s)", wait, rtt)
		require.Contains(t, task.Why, "delayed")
		require.Empty(t, b.claim(t, queue.DefaultQueue, 1), "a task in back-off is not claimable")

		var again []*queue.Task
		require.Eventually(t, func() bool { again = b.claim(t, queue.DefaultQueue, 1); return len(again) == 1 }, 10*time.Second, 50*time.Millisecond)
		res = b.finish(t, again[0], queue.OutcomeFailed, "still broken")
		require.Equal(t, queue.StateFailed, res.State, "no attempts left")
		task = b.get(t, id)
		require.Equal(t, 2, task.Attempts)
		require.Equal(t, "still broken", task.LastError)
		recs, err := b.s.TaskAttempts(b.ctx, id)
		require.NoError(t, err)
		require.Equal(t, []queue.Outcome{queue.OutcomeTimedOut, queue.OutcomeFailed}, []queue.Outcome{recs[0].Outcome, recs[1].Outcome})

		require.NoError(t, b.s.Retry(b.ctx, id, "erin"))
		again = b.claim(t, queue.DefaultQueue, 1)
		require.Len(t, again, 1, "a manual retry is claimable at once")
		require.Equal(t, queue.StatePending, b.finish(t, again[0], queue.OutcomeFailed, "x").State, "a retry grants a fresh budget")
	},
	"cancel_pending_and_running": func(t *testing.T, h Harness) {
		b := setup(t, h)
		id := b.enqueue(t, queue.NewTask{Body: "SELECT 1"}, queue.NewTask{Body: "SELECT 1", Group: "g"})
		st, err := b.s.Cancel(b.ctx, id[0], "frank")
		require.NoError(t, err)
		require.Equal(t, queue.StateCancelled, st)
		running := b.claim(t, queue.DefaultQueue, 1)
		require.Equal(t, []int64{id[1]}, ids(running))
		st, err = b.s.Cancel(b.ctx, id[1], "frank")
		require.NoError(t, err)
		require.Equal(t, queue.StateRunning, st, "a running task is asked to stop")
		require.True(t, b.get(t, id[1]).CancelRequested)
		hb, err := b.s.Heartbeat(b.ctx, []queue.Lease{running[0].Lease()}, time.Minute)
		require.NoError(t, err)
		require.Equal(t, []int64{id[1]}, hb.CancelRequested)
		require.Equal(t, queue.StateCancelled, b.finish(t, running[0], queue.OutcomeCancelled, "cancelled by frank").State)
		groups, err := b.s.Groups(b.ctx)
		require.NoError(t, err)
		require.Zero(t, groups[0].Running)

		_, err = b.s.Cancel(b.ctx, id[0], "frank")
		require.ErrorIs(t, err, queue.ErrInvalidState, "a finished task cannot be cancelled")
		_, err = b.s.Cancel(b.ctx, 987654, "frank")
		require.ErrorIs(t, err, queue.ErrNotFound)
		require.NoError(t, b.s.Retry(b.ctx, id[0], "frank"), "a cancelled task can be retried")
		require.ErrorIs(t, b.s.Retry(b.ctx, id[0], "frank"), queue.ErrInvalidState, "a pending task cannot be retried")
		require.ErrorIs(t, b.s.Retry(b.ctx, 987654, "frank"), queue.ErrNotFound)
	},
	"batch_finish_reports_each_lease": func(t *testing.T, h Harness) {
		b := setup(t, h)
		b.enqueue(t, queue.NewTask{Body: "SELECT 1"}, queue.NewTask{Body: "SELECT 1"})
		got := b.claim(t, queue.DefaultQueue, 2)
		stale := attempt(got[1], queue.OutcomeSucceeded, "")
		stale.Token++
		res, err := b.s.Finish(b.ctx, []queue.Attempt{attempt(got[0], queue.OutcomeSucceeded, ""), stale})
		require.NoError(t, err)
		require.NoError(t, res[0].Err)
		require.Equal(t, got[0].ID, res[0].TaskID)
		require.ErrorIs(t, res[1].Err, queue.ErrLeaseLost)
		require.Equal(t, queue.StateRunning, b.get(t, got[1].ID).State)
	},
	"finish_validates_outcome": func(t *testing.T, h Harness) {
		b := setup(t, h)
		b.enqueue(t, queue.NewTask{Body: "SELECT 1"})
		got := b.claim(t, queue.DefaultQueue, 1)
		for _, o := range []queue.Outcome{"", "lost", "weird"} {
			_, err := b.s.Finish(b.ctx, []queue.Attempt{attempt(got[0], o, "")})
			require.True(t, queue.IsValidation(err), "outcome %q must be refused, got %v", o, err)
		}
		require.Equal(t, queue.StateRunning, b.get(t, got[0].ID).State)
	},
}
