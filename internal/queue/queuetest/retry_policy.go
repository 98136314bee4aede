package queuetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/testenv"
)

// A retry waits what the task's retry policy says, else its queue's, else
// the default back-off: fixed, or doubling from the interval up to the cap
// (queue.RetryWait).
var retryPolicyTests = map[string]func(*testing.T, Harness){
	"a_task_s_policy_then_its_queue_s_then_the_default": func(t *testing.T, h Harness) {
		b := setup(t, h)
		fixed := &queue.RetryPolicy{Interval: 7 * time.Second}
		exp := &queue.RetryPolicy{Interval: 3 * time.Second, Cap: 10 * time.Second}
		// The queue's policy: fixed 20 s.
		q, err := b.s.UpdateQueue(b.ctx, "rp", queue.QueueUpdate{Retry: &queue.RetryPolicy{Interval: 20 * time.Second}, Actor: "ann"})
		require.NoError(t, err)
		require.Equal(t, &queue.RetryPolicy{Interval: 20 * time.Second}, q.Retry)
		ids := b.enqueue(t,
			queue.NewTask{Queue: "rp", Body: "SELECT 1", MaxAttempts: 5, Retry: fixed},
			queue.NewTask{Queue: "rp", Body: "SELECT 2", MaxAttempts: 5, Retry: exp},
			queue.NewTask{Queue: "rp", Body: "SELECT 3", MaxAttempts: 5})
		want := map[int64][]time.Duration{
			ids[0]: {7 * time.Second, 7 * time.Second, 7 * time.Second},
			ids[1]: {3 * time.Second, 6 * time.Second, 10 * time.Second},
			ids[2]: {20 * time.Second, 20 * time.Second, 20 * time.Second},
		}
		for retry := range 3 {
			for _, id := range ids {
				// Make it due again, then claim and fail it.
				b.env.Exec(t, "UPDATE readpast_tasks SET available_at = "+pastLiteral(h)+", delayed = "+falseLiteral(h)+" WHERE id = "+itoa64(id))
			}
			got := b.claim(t, "rp", 10)
			require.Len(t, got, 3, "retry %d", retry+1)
			for _, task := range got {
				res := b.finish(t, task, queue.OutcomeFailed, "boom")
				require.Equal(t, queue.StatePending, res.State)
				w := want[task.ID][retry]
				require.InDelta(t, w.Seconds(), time.Until(res.Retry).Seconds(), 1.5,
					"task %d, retry %d: waits %s", task.ID, retry+1, w)
			}
		}
		// Cleared, the queue's tasks go back to the default back-off (2^n s).
		q, err = b.s.UpdateQueue(b.ctx, "rp", queue.QueueUpdate{ClearRetry: true, Actor: "ann"})
		require.NoError(t, err)
		require.Nil(t, q.Retry)
		b.env.Exec(t, "UPDATE readpast_tasks SET available_at = "+pastLiteral(h)+", delayed = "+falseLiteral(h)+" WHERE id = "+itoa64(ids[2]))
		got := b.claim(t, "rp", 10)
		require.Len(t, got, 1)
		res := b.finish(t, got[0], queue.OutcomeFailed, "boom")
		require.InDelta(t, 16, time.Until(res.Retry).Seconds(), 4.5, "the fourth retry: 2^4 s ± 25 %")
		set, err := b.s.QueueSettings(b.ctx)
		require.NoError(t, err)
		for _, s := range set {
			if s.Name == "rp" {
				require.Nil(t, s.Retry)
			}
		}
	},
	"a_policy_out_of_range_is_refused": func(t *testing.T, h Harness) {
		b := setup(t, h)
		_, err := b.s.Enqueue(b.ctx, []queue.NewTask{{Body: "SELECT 1", Retry: &queue.RetryPolicy{Interval: 48 * time.Hour}}})
		require.True(t, queue.IsValidation(err), "%v", err)
		_, err = b.s.Enqueue(b.ctx, []queue.NewTask{{Body: "SELECT 1", Retry: &queue.RetryPolicy{Interval: time.Minute, Cap: time.Second}}})
		require.True(t, queue.IsValidation(err), "a cap below the interval: %v", err)
		_, err = b.s.UpdateQueue(b.ctx, "q", queue.QueueUpdate{Retry: &queue.RetryPolicy{}, Actor: "ann"})
		require.True(t, queue.IsValidation(err), "%v", err)
	},
}

// pastLiteral and falseLiteral are SQL literals of a time long past and of
// false for the test's dialect (times are microseconds on SQLite).
func pastLiteral(h Harness) string {
	switch h.Dialect {
	case testenv.SQLite:
		return "0"
	case testenv.Postgres:
		return "now() - interval '1 hour'"
	}
	return "DATEADD(hour, -1, SYSUTCDATETIME())"
}

func falseLiteral(h Harness) string {
	if h.Dialect == testenv.Postgres {
		return "false"
	}
	return "0"
}

func itoa64(v int64) string { return fmt.Sprint(v) }
