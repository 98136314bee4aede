package queuetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
)

var claimTests = map[string]func(*testing.T, Harness){
	"order_is_priority_available_at_id": func(t *testing.T, h Harness) {
		b := setup(t, h)
		base := past(0)
		// Enqueued out of order on purpose; want is the claim order.
		specs := []struct {
			prio int
			at   time.Duration
		}{{5, 3}, {1, 9}, {5, 1}, {1, 9}, {0, 50}, {5, 1}, {9, 0}, {1, 2}}
		tasks := make([]queue.NewTask, len(specs))
		for i, s := range specs {
			tasks[i] = queue.NewTask{Body: "SELECT 1", Priority: intp(s.prio), AvailableAt: base.Add(s.at * time.Second)}
		}
		id := b.enqueue(t, tasks...)
		want := []int64{id[4], id[7], id[1], id[3], id[2], id[5], id[0], id[6]}
		var got []int64
		for range want {
			c := b.claim(t, queue.DefaultQueue, 1)
			require.Len(t, c, 1)
			got = append(got, c[0].ID)
		}
		require.Equal(t, want, got, "one claimer must get tasks in priority, available_at, id order")
		require.Empty(t, b.claim(t, queue.DefaultQueue, 1))
	},
	"batch_is_in_order_and_bounded": func(t *testing.T, h Harness) {
		b := setup(t, h)
		var tasks []queue.NewTask
		for i := 0; i < 30; i++ {
			tasks = append(tasks, queue.NewTask{Body: "SELECT 1", Priority: intp(30 - i)})
		}
		id := b.enqueue(t, tasks...)
		got := b.claim(t, queue.DefaultQueue, 10)
		require.Len(t, got, 10)
		for i, task := range got {
			require.Equal(t, id[29-i], task.ID)
			require.Equal(t, queue.StateRunning, task.State)
			require.Equal(t, 1, task.Attempts)
			require.NotZero(t, task.LeaseToken)
			require.WithinDuration(t, time.Now().Add(time.Minute), task.LeaseExpiresAt, 30*time.Second)
		}
		require.Len(t, b.claim(t, queue.DefaultQueue, 100), 20)
	},
	"only_its_queue": func(t *testing.T, h Harness) {
		b := setup(t, h)
		b.enqueue(t, queue.NewTask{Body: "SELECT 1", Queue: "a"}, queue.NewTask{Body: "SELECT 1", Queue: "b"})
		got := b.claim(t, "a", 10)
		require.Len(t, got, 1)
		require.Equal(t, "a", got[0].Queue)
	},
	"delayed_waits": func(t *testing.T, h Harness) {
		b := setup(t, h)
		id := b.enqueue(t, queue.NewTask{Body: "SELECT 1", Delay: time.Hour},
			queue.NewTask{Body: "SELECT 1", AvailableAt: time.Now().Add(time.Hour)},
			queue.NewTask{Body: "SELECT 1", AvailableAt: past(0)})
		got := b.claim(t, queue.DefaultQueue, 10)
		require.Equal(t, []int64{id[2]}, ids(got), "only the task whose available_at passed is claimable")
		require.Contains(t, b.get(t, id[0]).Why, "delayed")
	},
	"paused_queue_gives_nothing": func(t *testing.T, h Harness) {
		b := setup(t, h)
		id := b.enqueue(t, queue.NewTask{Body: "SELECT 1", Queue: "p"})[0]
		q, err := b.s.UpdateQueue(b.ctx, "p", queue.QueueUpdate{Paused: ptr(true), Actor: "bob"})
		require.NoError(t, err)
		require.True(t, q.Paused)
		require.Equal(t, "bob", q.UpdatedBy)
		require.Empty(t, b.claim(t, "p", 10))
		require.Contains(t, b.get(t, id).Why, "paused")
		_, err = b.s.UpdateQueue(b.ctx, "p", queue.QueueUpdate{Paused: ptr(false), Actor: "bob"})
		require.NoError(t, err)
		require.Len(t, b.claim(t, "p", 10), 1)
	},
	"queue_max_running": func(t *testing.T, h Harness) {
		b := setup(t, h)
		for i := 0; i < 5; i++ {
			b.enqueue(t, queue.NewTask{Body: "SELECT 1", Queue: "capped"})
		}
		_, err := b.s.UpdateQueue(b.ctx, "capped", queue.QueueUpdate{MaxRunning: intp(2), Actor: "bob"})
		require.NoError(t, err)
		first := b.claim(t, "capped", 10)
		require.Len(t, first, 2, "max_running 2 admits two")
		require.Empty(t, b.claim(t, "capped", 10))
		left, err := b.s.List(b.ctx, queue.ListParams{Queue: "capped", State: queue.StatePending, Limit: 1})
		require.NoError(t, err)
		require.Contains(t, b.get(t, left[0].ID).Why, "max_running")
		b.finish(t, first[0], queue.OutcomeSucceeded, "")
		require.Len(t, b.claim(t, "capped", 10), 1, "a finished task frees one slot")
		_, err = b.s.UpdateQueue(b.ctx, "capped", queue.QueueUpdate{ClearMaxRunning: true, Actor: "bob"})
		require.NoError(t, err)
		require.Len(t, b.claim(t, "capped", 10), 2, "without a cap the rest is claimable")
	},
	"update_queue_validates": func(t *testing.T, h Harness) {
		b := setup(t, h)
		_, err := b.s.UpdateQueue(b.ctx, "q", queue.QueueUpdate{Workers: intp(-1)})
		require.True(t, queue.IsValidation(err), "negative workers: %v", err)
		_, err = b.s.UpdateQueue(b.ctx, "q", queue.QueueUpdate{MaxRunning: intp(0)})
		require.True(t, queue.IsValidation(err), "max_running 0: %v", err)
		_, err = b.s.UpdateQueue(b.ctx, "bad name", queue.QueueUpdate{Paused: ptr(true)})
		require.True(t, queue.IsValidation(err), "bad queue name: %v", err)
		q, err := b.s.UpdateQueue(b.ctx, "q", queue.QueueUpdate{Workers: intp(4), MaxRunning: intp(9)})
		require.NoError(t, err)
		require.Equal(t, 4, *q.Workers)
		require.Equal(t, 9, *q.MaxRunning)
	},
	"claim_validates": func(t *testing.T, h Harness) {
		b := setup(t, h)
		for _, p := range []queue.ClaimParams{
			{Queue: "q", Limit: 0, LeaseDuration: time.Minute},
			{Queue: "q", Limit: queue.MaxClaimLimit + 1, LeaseDuration: time.Minute},
			{Queue: "q", Limit: 1, LeaseDuration: 0},
			{Queue: "bad name", Limit: 1, LeaseDuration: time.Minute},
		} {
			_, err := b.s.Claim(b.ctx, p)
			require.True(t, queue.IsValidation(err), "claim %+v must be refused, got %v", p, err)
		}
	},
}

func ptr[T any](v T) *T { return &v }
