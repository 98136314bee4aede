package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
)

// Every claim sets started_at, so the lost-attempt row a reclaim writes spans
// that attempt only, not the task's first start.
func TestReclaimLogsTheLatestAttemptFromItsClaim(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, s.Migrate(ctx))
	enq, err := s.Enqueue(ctx, []queue.NewTask{{Queue: "r", Body: "SELECT 1", MaxAttempts: 3}})
	ids := queue.IDs(enq)
	require.NoError(t, err)
	claim := func(lease time.Duration) *queue.Task {
		t.Helper()
		tasks, err := s.Claim(ctx, queue.ClaimParams{Queue: "r", Owner: "n1/w1", Limit: 1, LeaseDuration: lease})
		require.NoError(t, err)
		require.Len(t, tasks, 1)
		return tasks[0]
	}

	first := claim(time.Minute)
	res, err := s.Release(ctx, []queue.Attempt{{Lease: first.Lease(), Outcome: queue.OutcomeCancelled, Node: "n1", Worker: "w1",
		StartedAt: first.StartedAt, FinishedAt: time.Now()}})
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	time.Sleep(400 * time.Millisecond)

	second := claim(50 * time.Millisecond)
	require.GreaterOrEqual(t, second.StartedAt.Sub(first.StartedAt), 400*time.Millisecond, "the second claim restarts started_at")
	time.Sleep(150 * time.Millisecond)
	reclaimed, err := s.ReclaimExpired(ctx, 10)
	require.NoError(t, err)
	require.Len(t, reclaimed, 1)
	require.Equal(t, ids[0], reclaimed[0].TaskID)

	recs, err := s.TaskAttempts(ctx, ids[0])
	require.NoError(t, err)
	require.Len(t, recs, 2)
	lost := recs[1]
	require.Equal(t, queue.OutcomeLost, lost.Outcome)
	require.Equal(t, 2, lost.Attempt)
	require.Equal(t, "n1", lost.Node)
	require.WithinDuration(t, second.StartedAt, lost.StartedAt, time.Millisecond, "the lost attempt starts at its own claim")
	require.Less(t, lost.Duration, 400*time.Millisecond, "the lost attempt's duration is its own, not since the first start")
	require.GreaterOrEqual(t, lost.Duration, 150*time.Millisecond)
}
