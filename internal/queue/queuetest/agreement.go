package queuetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/testenv"
)

// The log never disagrees with the task: every attempt row has its finish
// time (never the zero time, which retention would purge at once), no earlier
// than its start, and its outcome; the session id where the dialect has one;
// a task's attempts are its rows, numbered 1, 2, 3 …; a task that succeeded
// carries no error of an earlier attempt.
var agreementTests = map[string]func(*testing.T, Harness){
	"log_and_task_agree": func(t *testing.T, h Harness) {
		b := setup(t, h)
		start := time.Now()
		id := b.enqueue(t,
			queue.NewTask{Body: "SELECT 1", Queue: "ag", MaxAttempts: 1},
			queue.NewTask{Body: "SELECT 1", Queue: "ag-lost"},
			queue.NewTask{Body: "SELECT 1", Queue: "ag-tx", Transactional: true, MaxAttempts: 1})

		// Task 0 fails for good, an operator retries it, and it succeeds.
		got := b.claim(t, "ag", 1)
		require.Equal(t, queue.StateFailed, b.finish(t, got[0], queue.OutcomeFailed, "deadlock").State)
		require.Equal(t, "deadlock", b.get(t, id[0]).LastError)
		require.NoError(t, b.s.Retry(b.ctx, id[0], "t"))
		got = b.claim(t, "ag", 1)
		require.Equal(t, queue.StateSucceeded, b.finish(t, got[0], queue.OutcomeSucceeded, "").State)

		// Task 1's lease expires and is reclaimed; it then succeeds.
		lost, err := b.s.Claim(b.ctx, queue.ClaimParams{Queue: "ag-lost", Owner: "gone/w", Limit: 1, LeaseDuration: 200 * time.Millisecond})
		require.NoError(t, err)
		require.NoError(t, b.s.SetSession(b.ctx, lost[0].Lease(), "77"))
		time.Sleep(500 * time.Millisecond)
		require.Len(t, mustReclaim(t, b), 1)
		require.Eventually(t, func() bool { got = b.claim(t, "ag-lost", 1); return len(got) == 1 }, 10*time.Second, 50*time.Millisecond)
		require.Equal(t, queue.StateSucceeded, b.finish(t, got[0], queue.OutcomeSucceeded, "").State)

		// Task 2 commits in its own transaction.
		got = b.claim(t, "ag-tx", 1)
		tx, err := b.runTransactional(t, b.ctx, got[0], "SELECT 1")
		require.NoError(t, err)
		require.True(t, tx.Committed, "%v", tx.BodyErr)

		for i, taskID := range id {
			task := b.get(t, taskID)
			require.Equal(t, queue.StateSucceeded, task.State, "task %d", i)
			require.Empty(t, task.LastError, "task %d succeeded: no earlier attempt's error stays on it", i)
			recs, err := b.s.TaskAttempts(b.ctx, taskID)
			require.NoError(t, err)
			require.Len(t, recs, task.Attempts, "task %d: one log row per attempt", i)
			for n, r := range recs {
				require.Equal(t, n+1, r.Attempt, "task %d: attempts are numbered in order", i)
				require.True(t, r.Outcome.Valid(), "task %d attempt %d: outcome %q", i, r.Attempt, r.Outcome)
				require.False(t, r.FinishedAt.Before(start.Add(-time.Minute)), "task %d attempt %d: finished_at %s is a real time", i, r.Attempt, r.FinishedAt)
				require.False(t, r.FinishedAt.After(time.Now().Add(time.Minute)), "task %d attempt %d: finished_at %s", i, r.Attempt, r.FinishedAt)
				require.False(t, r.FinishedAt.Before(r.StartedAt), "task %d attempt %d ends before it starts", i, r.Attempt)
			}
			last := recs[len(recs)-1]
			require.Equal(t, queue.OutcomeSucceeded, last.Outcome, "task %d: the state comes from its last attempt", i)
		}
		recs, err := b.s.TaskAttempts(b.ctx, id[1])
		require.NoError(t, err)
		require.Equal(t, queue.OutcomeLost, recs[0].Outcome)
		require.Equal(t, "77", recs[0].SessionID, "a lost attempt keeps the session it ran on")
		if h.Dialect != testenv.SQLite {
			recs, err = b.s.TaskAttempts(b.ctx, id[2])
			require.NoError(t, err)
			require.NotEmpty(t, recs[0].SessionID, "a transactional attempt records its session")
		}
	},
}
