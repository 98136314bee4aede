package queuetest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/testenv"
)

// Unique keys: while an unfinished task of a queue has a key, enqueueing
// another task with that key in that queue returns the existing task and
// writes nothing.
var uniqueTests = map[string]func(*testing.T, Harness){
	"a_key_holds_while_its_task_is_unfinished": func(t *testing.T, h Harness) {
		b := setup(t, h)
		first, err := b.s.Enqueue(b.ctx, []queue.NewTask{{Body: "SELECT 1", Queue: "u", UniqueKey: "nightly"}})
		require.NoError(t, err)
		require.False(t, first[0].Duplicate)
		require.Equal(t, "nightly", b.get(t, first[0].ID).UniqueKey)

		again, err := b.s.Enqueue(b.ctx, []queue.NewTask{
			{Body: "SELECT 2", Queue: "u", UniqueKey: "nightly"},
			{Body: "SELECT 3", Queue: "u", UniqueKey: "other"},
			{Body: "SELECT 4", Queue: "u", UniqueKey: "other"},
			{Body: "SELECT 5", Queue: "u2", UniqueKey: "nightly"},
			{Body: "SELECT 6", Queue: "u"},
		})
		require.NoError(t, err)
		require.Equal(t, queue.Enqueued{ID: first[0].ID, Duplicate: true}, again[0], "the unfinished task is returned")
		require.False(t, again[1].Duplicate)
		require.Equal(t, queue.Enqueued{ID: again[1].ID, Duplicate: true}, again[2], "a key holds within one batch too")
		require.False(t, again[3].Duplicate, "keys are per queue")
		require.False(t, again[4].Duplicate, "a task without a key is never a duplicate")
		require.Equal(t, "SELECT 1", b.get(t, first[0].ID).Body, "the duplicate changed nothing")

		got := b.claim(t, "u", 1)
		require.Equal(t, first[0].ID, got[0].ID)
		dup, err := b.s.Enqueue(b.ctx, []queue.NewTask{{Body: "SELECT 7", Queue: "u", UniqueKey: "nightly"}})
		require.NoError(t, err)
		require.Equal(t, queue.Enqueued{ID: first[0].ID, Duplicate: true}, dup[0], "a running task holds its key")

		b.finish(t, got[0], queue.OutcomeFailed, "x") // attempts left: pending again, still holding
		dup, err = b.s.Enqueue(b.ctx, []queue.NewTask{{Body: "SELECT 8", Queue: "u", UniqueKey: "nightly"}})
		require.NoError(t, err)
		require.True(t, dup[0].Duplicate, "a task waiting for its retry holds its key")

		_, err = b.s.Cancel(b.ctx, first[0].ID, "op")
		require.NoError(t, err)
		fresh, err := b.s.Enqueue(b.ctx, []queue.NewTask{{Body: "SELECT 9", Queue: "u", UniqueKey: "nightly"}})
		require.NoError(t, err)
		require.False(t, fresh[0].Duplicate, "a finished task holds no key")
		require.NotEqual(t, first[0].ID, fresh[0].ID)

		err = b.s.Retry(b.ctx, first[0].ID, "op")
		require.ErrorIs(t, err, queue.ErrInvalidState, "a retry cannot make two unfinished tasks share a key")
		require.Equal(t, queue.StateCancelled, b.get(t, first[0].ID).State)
	},
	"concurrent_enqueues_of_one_key_create_one_task": func(t *testing.T, h Harness) {
		b := setup(t, h)
		var wg sync.WaitGroup
		var created atomic.Int64
		ids := make(chan int64, 16*10)
		errs := make(chan error, 16)
		for w := 0; w < 16; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 10; i++ {
					res, err := b.s.Enqueue(b.ctx, []queue.NewTask{{Body: "SELECT 1", Queue: "uc", UniqueKey: "once"}})
					if err != nil {
						errs <- err
						return
					}
					if !res[0].Duplicate {
						created.Add(1)
					}
					ids <- res[0].ID
				}
			}()
		}
		wg.Wait()
		close(errs)
		close(ids)
		for err := range errs {
			require.NoError(t, err)
		}
		require.Equal(t, int64(1), created.Load(), "160 enqueues of one key create one task")
		var first int64
		for id := range ids {
			if first == 0 {
				first = id
			}
			require.Equal(t, first, id, "every enqueue returns the one task")
		}
		require.Equal(t, int64(1), queueCounts(t, b, "uc")[queue.StatePending])
	},
	"keys_do_not_make_claimers_wait": func(t *testing.T, h Harness) {
		b := setup(t, h)
		if !b.s.Capabilities().ConcurrentWriters {
			t.Skip("one writer: claims run one at a time by design")
		}
		b.env.SkipOnBabelfish(t, testenv.BabelfishLockHints)
		var tasks []queue.NewTask
		for i := 0; i < 20; i++ {
			tasks = append(tasks, queue.NewTask{Body: "SELECT 1", Queue: "uk", UniqueKey: string(rune('a' + i))})
		}
		b.enqueue(t, tasks...)
		a, err := b.s.Hold(b.ctx, queue.HoldOp{Kind: queue.HoldClaim, Claim: queue.ClaimParams{Queue: "uk", Owner: "A", Limit: 5, LeaseDuration: time.Minute}})
		require.NoError(t, err)
		t.Cleanup(func() { _ = a.Release(b.ctx) })
		// An enqueue of a key A's open claim holds may wait for A; claimers may not.
		ctx, cancel := context.WithTimeout(b.ctx, noWait)
		defer cancel()
		got, err := b.s.Claim(ctx, queue.ClaimParams{Queue: "uk", Owner: "B", Limit: 20, LeaseDuration: time.Minute})
		require.NoError(t, err, "claimer B must not wait on A's open claim of keyed tasks")
		require.Len(t, got, 15)
	},
}
