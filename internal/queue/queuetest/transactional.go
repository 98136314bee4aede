package queuetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
)

var transactionalTests = map[string]func(*testing.T, Harness){
	"effect_and_completion_commit_together": func(t *testing.T, h Harness) {
		b := setup(t, h)
		// probe runs body as a transactional task and returns what became of it.
		probe := func(body string) (queue.FinishResult, error) {
			b.enqueue(t, queue.NewTask{Body: body, Queue: "tx", Transactional: true, MaxAttempts: 1})
			got := b.claim(t, "tx", 1)
			require.Len(t, got, 1)
			return b.s.RunTransactional(b.ctx, attempt(got[0], queue.OutcomeSucceeded, ""), body)
		}
		res, err := probe("CREATE TABLE tx_probe (n int)\nGO\nINSERT INTO tx_probe VALUES (1)")
		require.NoError(t, err)
		require.Equal(t, queue.StateSucceeded, res.State)
		recs, err := b.s.TaskAttempts(b.ctx, res.TaskID)
		require.NoError(t, err)
		require.Len(t, recs, 1)
		require.Equal(t, int64(1), recs[0].RowsAffected, "rows affected by the body are recorded")

		// A failing body rolls back its earlier batches and is a failed attempt.
		res, err = probe("CREATE TABLE tx_half (n int)\nGO\nINSERT INTO no_such_table VALUES (1)")
		require.NoError(t, err)
		require.Equal(t, queue.StateFailed, res.State)
		require.NotEmpty(t, b.get(t, res.TaskID).LastError)
		res, err = probe("CREATE TABLE tx_half (n int)")
		require.NoError(t, err)
		require.Equal(t, queue.StateSucceeded, res.State, "the failed body's first batch must have been rolled back")

		// A lost lease rolls the body back: its effect never commits.
		b.enqueue(t, queue.NewTask{Body: "x", Queue: "tx2", Transactional: true})
		old, err := b.s.Claim(b.ctx, queue.ClaimParams{Queue: "tx2", Owner: "dead", Limit: 1, LeaseDuration: 100 * time.Millisecond})
		require.NoError(t, err)
		time.Sleep(400 * time.Millisecond)
		require.Len(t, mustReclaim(t, b), 1)
		_, err = b.s.RunTransactional(b.ctx, attempt(old[0], queue.OutcomeSucceeded, ""), "CREATE TABLE tx_lost (n int)")
		require.ErrorIs(t, err, queue.ErrLeaseLost)
		res, err = probe("CREATE TABLE tx_lost (n int)")
		require.NoError(t, err)
		require.Equal(t, queue.StateSucceeded, res.State, "the fenced-off body must not have committed")
	},
}
