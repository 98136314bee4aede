package queuetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
)

// An operator's cancel of a running task is never lost: whatever ends the
// attempt (the holder's finish with any outcome, a release at shutdown, a
// reclaim of its expired lease), the task ends cancelled and its chain's later
// stages follow the failure policy.
var cancelTests = map[string]func(*testing.T, Harness){
	"cancel_requested_survives_release": func(t *testing.T, h Harness) {
		b := setup(t, h)
		id := b.enqueue(t, queue.NewTask{Body: "SELECT 1", Queue: "c"})[0]
		got := b.claim(t, "c", 1)
		cancelRunning(t, b, id)
		res, err := b.s.Release(b.ctx, []queue.Attempt{attempt(got[0], queue.OutcomeCancelled, "released at shutdown")})
		require.NoError(t, err)
		require.NoError(t, res[0].Err)
		require.Equal(t, queue.StateCancelled, res[0].State, "a released task whose cancel was requested ends cancelled")
		requireCancelledForGood(t, b, id, "c")
	},
	"cancel_requested_survives_reclaim": func(t *testing.T, h Harness) {
		b := setup(t, h)
		id := b.enqueue(t, queue.NewTask{Body: "SELECT 1", Queue: "c"})[0]
		_, err := b.s.Claim(b.ctx, queue.ClaimParams{Queue: "c", Owner: "dead/w", Limit: 1, LeaseDuration: 200 * time.Millisecond})
		require.NoError(t, err)
		cancelRunning(t, b, id)
		time.Sleep(500 * time.Millisecond)
		res := mustReclaim(t, b)
		require.Len(t, res, 1)
		require.Equal(t, queue.StateCancelled, res[0].State, "a reclaimed task whose cancel was requested ends cancelled")
		recs, err := b.s.TaskAttempts(b.ctx, id)
		require.NoError(t, err)
		require.Len(t, recs, 1)
		require.Equal(t, queue.OutcomeLost, recs[0].Outcome, "the attempt itself was lost")
		requireCancelledForGood(t, b, id, "c")
	},
	"cancel_requested_survives_a_failed_attempt": func(t *testing.T, h Harness) {
		b := setup(t, h)
		ids := b.enqueue(t, queue.NewTask{Body: "SELECT 1", Queue: "c", Chain: "ch", Stage: 0},
			queue.NewTask{Body: "SELECT 1", Queue: "c", Chain: "ch", Stage: 1})
		got := b.claim(t, "c", 1)
		require.Equal(t, ids[0], got[0].ID)
		cancelRunning(t, b, ids[0])
		// The body failed on its own before the holder saw the request: with
		// attempts left it would retry, but the operator asked it to stop.
		require.Equal(t, queue.StateCancelled, b.finish(t, got[0], queue.OutcomeFailed, "deadlock").State)
		requireCancelledForGood(t, b, ids[0], "c")
		require.Equal(t, queue.StateCancelled, b.get(t, ids[1]).State, "the chain's later stage is cancelled with it")
	},
}

func cancelRunning(t *testing.T, b bundle, id int64) {
	t.Helper()
	st, err := b.s.Cancel(b.ctx, id, "frank")
	require.NoError(t, err)
	require.Equal(t, queue.StateRunning, st)
}

// requireCancelledForGood checks the task is cancelled and never claimed again.
func requireCancelledForGood(t *testing.T, b bundle, id int64, q string) {
	t.Helper()
	task := b.get(t, id)
	require.Equal(t, queue.StateCancelled, task.State)
	require.False(t, task.FinishedAt.IsZero(), "a cancelled task has its finish time")
	require.Empty(t, b.claim(t, q, 10), "a cancelled task never runs again")
}
