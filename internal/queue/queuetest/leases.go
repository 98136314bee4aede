package queuetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/testenv"
)

var leaseTests = map[string]func(*testing.T, Harness){
	// The reclaim hands each expired attempt to the node's ender
	// (queue.WithLostSessionEnder) while its task is still running, so the
	// attempt's body is stopped on the target before the task can be
	// claimed again (docs/WORKERS.md, "Ending a lost attempt's session").
	"reclaim_ends_lost_sessions_before_the_task_is_claimable": func(t *testing.T, h Harness) {
		if h.Dialect == testenv.SQLite {
			t.Skip("SQLite's store has no sessions to end and does not call the ender (queue.WithLostSessionEnder)")
		}
		b := setup(t, h)
		id := b.enqueue(t, queue.NewTask{Body: "SELECT 1"})[0]
		got, err := b.s.Claim(b.ctx, queue.ClaimParams{Queue: queue.DefaultQueue, Owner: "frozen-node/w1", Limit: 1, LeaseDuration: 200 * time.Millisecond})
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.NoError(t, b.s.SetSession(b.ctx, got[0].Lease(), "57"))
		time.Sleep(500 * time.Millisecond)
		var handed []queue.Attempt
		var stateMeanwhile queue.State
		ctx := queue.WithLostSessionEnder(b.ctx, func(ctx context.Context, lost []queue.Attempt) {
			handed = append(handed, lost...)
			stateMeanwhile = b.get(t, id).State
		})
		res, err := b.s.ReclaimExpired(ctx, 10)
		require.NoError(t, err)
		require.Len(t, res, 1)
		require.Len(t, handed, 1, "the expired attempt went to the ender")
		require.Equal(t, got[0].Lease(), handed[0].Lease, "with its lease, which names its session (queue.AttemptSessionName)")
		require.Equal(t, "57", handed[0].SessionID)
		require.Equal(t, "frozen-node", handed[0].Node)
		require.Equal(t, queue.StateRunning, stateMeanwhile, "the task could not be claimed while its session was being ended")
		require.Equal(t, queue.StatePending, b.get(t, id).State)
	},
	"expired_lease_is_reclaimed_and_old_holder_fenced": func(t *testing.T, h Harness) {
		b := setup(t, h)
		id := b.enqueue(t, queue.NewTask{Body: "SELECT 1"})[0]
		old, err := b.s.Claim(b.ctx, queue.ClaimParams{Queue: queue.DefaultQueue, Owner: "dead-node/w1", Limit: 1, LeaseDuration: 300 * time.Millisecond})
		require.NoError(t, err)
		require.Len(t, old, 1)
		require.Empty(t, mustReclaim(t, b), "a live lease must not be reclaimed")
		time.Sleep(700 * time.Millisecond)
		res := mustReclaim(t, b)
		require.Len(t, res, 1)
		require.Equal(t, id, res[0].TaskID)
		require.Equal(t, queue.StatePending, res[0].State, "attempts remain, so the task goes back to pending")
		recs, err := b.s.TaskAttempts(b.ctx, id)
		require.NoError(t, err)
		require.Len(t, recs, 1)
		require.Equal(t, queue.OutcomeLost, recs[0].Outcome)
		require.Equal(t, 1, recs[0].Attempt)
		require.WithinDuration(t, old[0].StartedAt, recs[0].StartedAt, time.Millisecond, "the lost attempt ran from its claim")
		require.GreaterOrEqual(t, recs[0].Duration, 300*time.Millisecond, "until it was reclaimed")

		var fresh []*queue.Task
		require.Eventually(t, func() bool { fresh = b.claim(t, queue.DefaultQueue, 1); return len(fresh) == 1 },
			10*time.Second, 50*time.Millisecond, "the reclaimed task must become claimable after its back-off")
		require.Equal(t, id, fresh[0].ID)
		require.Equal(t, 2, fresh[0].Attempts)
		require.True(t, fresh[0].StartedAt.After(old[0].StartedAt), "each claim starts its attempt anew")
		require.NotEqual(t, old[0].LeaseToken, fresh[0].LeaseToken)

		out, err := b.s.Finish(b.ctx, []queue.Attempt{attempt(old[0], queue.OutcomeSucceeded, "")})
		require.NoError(t, err)
		require.ErrorIs(t, out[0].Err, queue.ErrLeaseLost, "the old holder must not finish the task")
		hb, err := b.s.Heartbeat(b.ctx, []queue.Lease{old[0].Lease(), fresh[0].Lease()}, time.Minute)
		require.NoError(t, err)
		require.Equal(t, []int64{id}, hb.Lost, "the old lease is lost")
		require.ErrorIs(t, b.s.SetSession(b.ctx, old[0].Lease(), "99"), queue.ErrLeaseLost)
		_, err = b.s.Release(b.ctx, []queue.Attempt{attempt(old[0], queue.OutcomeCancelled, "")})
		require.NoError(t, err)
		require.Equal(t, queue.StateRunning, b.get(t, id).State, "the stale release changed nothing")
		require.Equal(t, queue.StateSucceeded, b.finish(t, fresh[0], queue.OutcomeSucceeded, "").State)
	},
	"lost_with_no_attempts_left_fails": func(t *testing.T, h Harness) {
		b := setup(t, h)
		id := b.enqueue(t, queue.NewTask{Body: "SELECT 1", MaxAttempts: 1})[0]
		_, err := b.s.Claim(b.ctx, queue.ClaimParams{Queue: queue.DefaultQueue, Owner: "x", Limit: 1, LeaseDuration: 100 * time.Millisecond})
		require.NoError(t, err)
		time.Sleep(400 * time.Millisecond)
		res := mustReclaim(t, b)
		require.Len(t, res, 1)
		require.Equal(t, queue.StateFailed, res[0].State)
		task := b.get(t, id)
		require.Equal(t, queue.StateFailed, task.State)
		require.Contains(t, task.LastError, "lease")
	},
	"heartbeat_keeps_a_lease": func(t *testing.T, h Harness) {
		b := setup(t, h)
		b.enqueue(t, queue.NewTask{Body: "SELECT 1"})
		got, err := b.s.Claim(b.ctx, queue.ClaimParams{Queue: queue.DefaultQueue, Owner: "x", Limit: 1, LeaseDuration: 600 * time.Millisecond})
		require.NoError(t, err)
		for i := 0; i < 4; i++ {
			time.Sleep(250 * time.Millisecond)
			hb, err := b.s.Heartbeat(b.ctx, []queue.Lease{got[0].Lease()}, 600*time.Millisecond)
			require.NoError(t, err)
			require.Empty(t, hb.Lost)
		}
		require.Empty(t, mustReclaim(t, b), "a heartbeated lease must not expire")
		require.NoError(t, b.s.SetSession(b.ctx, got[0].Lease(), "53"))
		require.Equal(t, "53", b.get(t, got[0].ID).SessionID)
	},
	"release_gives_the_task_back_now": func(t *testing.T, h Harness) {
		b := setup(t, h)
		id := b.enqueue(t, queue.NewTask{Body: "SELECT 1", MaxAttempts: 1, Group: "g"})[0]
		got := b.claim(t, queue.DefaultQueue, 1)
		res, err := b.s.Release(b.ctx, []queue.Attempt{attempt(got[0], queue.OutcomeCancelled, "released at shutdown")})
		require.NoError(t, err)
		require.NoError(t, res[0].Err)
		require.Equal(t, queue.StatePending, res[0].State)
		again := b.claim(t, queue.DefaultQueue, 1)
		require.Equal(t, []int64{id}, ids(again), "a released task is claimable at once, group slot freed")
		recs, err := b.s.TaskAttempts(b.ctx, id)
		require.NoError(t, err)
		require.Len(t, recs, 1)
		require.Equal(t, queue.OutcomeCancelled, recs[0].Outcome)
	},
	// An attempt a fault of the database stopped (the session lost, the
	// server restarted, the node fenced) is released Uncounted: it goes back
	// to the task's budget, so max_attempts counts the body's own tries
	// (issue 25). Two faults and a body error on a task of two attempts: the
	// error is its first, and it retries.
	"release_of_a_fault_gives_the_attempt_back": func(t *testing.T, h Harness) {
		b := setup(t, h)
		id := b.enqueue(t, queue.NewTask{Body: "SELECT 1", MaxAttempts: 2})[0]
		for range 2 {
			got := b.claim(t, queue.DefaultQueue, 1)
			a := attempt(got[0], queue.OutcomeFailed, "the connection to the database was lost")
			a.Uncounted = true
			res, err := b.s.Release(b.ctx, []queue.Attempt{a})
			require.NoError(t, err)
			require.NoError(t, res[0].Err)
			require.Equal(t, queue.StatePending, res[0].State)
		}
		got := b.claim(t, queue.DefaultQueue, 1)
		res, err := b.s.Finish(b.ctx, []queue.Attempt{attempt(got[0], queue.OutcomeFailed, "division by zero")})
		require.NoError(t, err)
		require.Equal(t, queue.StatePending, res[0].State, "the body's first error retries: the faults used none of its two attempts")
		recs, err := b.s.TaskAttempts(b.ctx, id)
		require.NoError(t, err)
		require.Len(t, recs, 3, "every attempt is logged, the faults too")
	},
	// A node heartbeats every lease it holds while its finisher ends some of
	// them: both touch the same rows at once, in their own orders, and neither
	// may fail (deadlock) or lose a lease it still holds.
	"heartbeat_and_finish_of_the_same_leases_at_once": func(t *testing.T, h Harness) {
		b := setup(t, h)
		const n = 300
		tasks := make([]queue.NewTask, n)
		for i := range tasks {
			tasks[i] = queue.NewTask{Body: "SELECT 1"}
		}
		b.enqueue(t, tasks...)
		var held []*queue.Task
		for len(held) < n {
			held = append(held, b.claim(t, queue.DefaultQueue, 100)...)
		}
		done := make(chan struct{})
		beats := make(chan error, 1)
		go func() {
			defer close(beats)
			leases := make([]queue.Lease, n)
			for i, task := range held {
				leases[n-1-i] = task.Lease() // the reverse of the finisher's order
			}
			for {
				select {
				case <-done:
					return
				default:
				}
				if _, err := b.s.Heartbeat(b.ctx, leases, time.Minute); err != nil {
					beats <- err
					return
				}
			}
		}()
		for i := 0; i < n; i += 10 {
			var batch []queue.Attempt
			for _, task := range held[i : i+10] {
				batch = append(batch, attempt(task, queue.OutcomeSucceeded, ""))
			}
			res, err := b.s.Finish(b.ctx, batch)
			require.NoError(t, err, "finishing while heartbeats run")
			for _, r := range res {
				require.NoError(t, r.Err)
				require.Equal(t, queue.StateSucceeded, r.State)
			}
		}
		close(done)
		require.NoError(t, <-beats, "heartbeating while finishes run")
	},
}

func mustReclaim(t *testing.T, b bundle) []queue.FinishResult {
	t.Helper()
	res, err := b.s.ReclaimExpired(b.ctx, 100)
	require.NoError(t, err)
	for _, r := range res {
		if r.Err != nil && !errors.Is(r.Err, queue.ErrLeaseLost) {
			t.Fatalf("reclaim of %d: %v", r.TaskID, r.Err)
		}
	}
	return res
}
