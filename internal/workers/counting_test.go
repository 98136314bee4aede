package workers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/testenv"
)

// A task whose lease was lost and which another node claimed again is
// counted once, when the new attempt ends, even if the lost attempt's answer
// comes between the new claim and its end (as when a finish waits past its
// lease on a slow server): `readpast bench` waits for that count.
func TestCountCallsCountsATaskClaimedAgainAfterALostLease(t *testing.T) {
	t.Parallel()
	e := testenv.New(t, testenv.SQLite)
	s, calls := CountCalls(e.Store)
	id := e.Enqueue(t, queue.NewTask{Queue: "q", Body: "SELECT 1"})[0]
	first, err := s.Claim(e.Ctx, queue.ClaimParams{Queue: "q", Owner: "a/w1", Limit: 1, LeaseDuration: 300 * time.Millisecond})
	require.NoError(t, err)
	require.Len(t, first, 1)
	time.Sleep(700 * time.Millisecond)
	reclaimed, err := s.ReclaimExpired(e.Ctx, 10)
	require.NoError(t, err)
	require.Len(t, reclaimed, 1)
	var second []*queue.Task
	require.Eventually(t, func() bool { // after the lost attempt's back-off
		second, err = s.Claim(e.Ctx, queue.ClaimParams{Queue: "q", Owner: "b/w1", Limit: 1, LeaseDuration: time.Hour})
		return err == nil && len(second) == 1
	}, 10*time.Second, 50*time.Millisecond, "the reclaimed task is claimed again")
	require.Equal(t, id, second[0].ID)

	res, err := s.Finish(e.Ctx, []queue.Attempt{{Lease: first[0].Lease(), Outcome: queue.OutcomeSucceeded}})
	require.NoError(t, err)
	require.ErrorIs(t, res[0].Err, queue.ErrLeaseLost, "the first attempt's lease is gone")
	res, err = s.Finish(e.Ctx, []queue.Attempt{{Lease: second[0].Lease(), Outcome: queue.OutcomeSucceeded}})
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	require.Equal(t, int64(1), calls.Finished("q"), "the task ended once, in queue q")
}
