package queuetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
)

// logBase is when the generated attempts of the log tests finished (attempt k
// at logBase + k seconds): far in the past, so retention cutoffs are exact.
var logBase = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// writeHistory makes `tasks` tasks in queues l0, l1, l2 (task i in l<i%3>) and
// gives each three attempts through the store itself: two released, the
// third finished. Attempt k (0-based, in the order written) finished at
// logBase + k s with outcome outcomeOf(k). It returns the task ids.
func writeHistory(t *testing.T, b bundle, tasks int) []int64 {
	t.Helper()
	batch := make([]queue.NewTask, tasks)
	for i := range batch {
		batch[i] = queue.NewTask{Queue: fmt.Sprintf("l%d", i%3), Body: "SELECT 1"}
	}
	ids := b.enqueue(t, batch...)
	k := 0
	for round := 0; round < 3; round++ {
		var attempts []queue.Attempt
		for q := 0; q < 3; q++ {
			for _, task := range b.claim(t, fmt.Sprintf("l%d", q), queue.MaxClaimLimit) {
				fin := logBase.Add(time.Duration(k) * time.Second)
				attempts = append(attempts, queue.Attempt{Lease: task.Lease(), Outcome: outcomeOf(k), Node: "n1", Worker: "w1",
					SessionID: "7", StartedAt: fin.Add(-5 * time.Millisecond), FinishedAt: fin, Messages: "m"})
				k++
			}
		}
		require.Len(t, attempts, tasks, "round %d claims every task once", round)
		end := b.s.Release
		if round == 2 {
			end = b.s.Finish
		}
		res, err := end(b.ctx, attempts)
		require.NoError(t, err)
		for _, r := range res {
			require.NoError(t, r.Err)
		}
	}
	return ids
}

// outcomeOf is the outcome writeHistory gives attempt k: one in five failed,
// one in five timed out, the rest succeeded.
func outcomeOf(k int) queue.Outcome {
	switch k % 5 {
	case 0:
		return queue.OutcomeFailed
	case 1:
		return queue.OutcomeTimedOut
	}
	return queue.OutcomeSucceeded
}

// countLog pages through the log with q and checks every row matches it.
func countLog(t *testing.T, b bundle, q queue.LogQuery) int {
	t.Helper()
	total := 0
	q.Limit = 40
	for {
		page, err := b.s.Attempts(b.ctx, q)
		require.NoError(t, err)
		for i, r := range page {
			require.True(t, q.TaskID == 0 || r.TaskID == q.TaskID, "task filter")
			require.True(t, q.Queue == "" || r.Queue == q.Queue, "queue filter")
			require.True(t, q.Outcome == "" || r.Outcome == q.Outcome, "outcome filter")
			require.True(t, q.Since.IsZero() || !r.FinishedAt.Before(q.Since), "since filter")
			require.True(t, q.Until.IsZero() || r.FinishedAt.Before(q.Until), "until filter")
			if i > 0 {
				require.Less(t, r.ID, page[i-1].ID, "newest first")
			}
		}
		total += len(page)
		if len(page) < q.Limit {
			return total
		}
		q.Before = page[len(page)-1].ID
	}
}

var logTests = map[string]func(*testing.T, Harness){
	"attempts_filter_and_page": func(t *testing.T, h Harness) {
		b := setup(t, h)
		ids := writeHistory(t, b, 90)
		require.Equal(t, 270, countLog(t, b, queue.LogQuery{}))
		require.Equal(t, 90, countLog(t, b, queue.LogQuery{Queue: "l1"}))
		require.Equal(t, 54, countLog(t, b, queue.LogQuery{Outcome: queue.OutcomeFailed}))
		require.Equal(t, 3, countLog(t, b, queue.LogQuery{TaskID: ids[7]}))
		require.Equal(t, 100, countLog(t, b, queue.LogQuery{Since: logBase.Add(100 * time.Second), Until: logBase.Add(200 * time.Second)}))
		require.Equal(t, 20, countLog(t, b, queue.LogQuery{Outcome: queue.OutcomeTimedOut, Until: logBase.Add(100 * time.Second)}))
		require.Equal(t, 18, countLog(t, b, queue.LogQuery{Queue: "l1", Outcome: queue.OutcomeFailed}))
		require.Equal(t, 30, countLog(t, b, queue.LogQuery{Queue: "l1", Since: logBase.Add(100 * time.Second), Until: logBase.Add(200 * time.Second)}))

		recs, err := b.s.Attempts(b.ctx, queue.LogQuery{TaskID: ids[7]})
		require.NoError(t, err)
		require.Len(t, recs, 3)
		r := recs[0]
		require.Equal(t, 3, r.Attempt, "newest first: the third attempt")
		require.Equal(t, "l1", r.Queue)
		require.Equal(t, "n1", r.Node)
		require.Equal(t, "w1", r.Worker)
		require.Equal(t, "7", r.SessionID)
		require.Equal(t, "m", r.Messages)
		require.Equal(t, 5*time.Millisecond, r.Duration)
		require.Equal(t, r.FinishedAt.Sub(r.StartedAt), r.Duration)
		require.Equal(t, logBase.Year(), r.FinishedAt.Year(), "finished_at is the worker's")

		for _, bad := range []queue.LogQuery{{Outcome: "bogus"}, {Limit: -1}, {Limit: 10001}, {Queue: "bad name"}} {
			_, err := b.s.Attempts(b.ctx, bad)
			require.True(t, queue.IsValidation(err), "log query %+v must be refused, got %v", bad, err)
		}
	},
	"purge_attempts_in_batches_by_cutoff": func(t *testing.T, h Harness) {
		b := setup(t, h)
		writeHistory(t, b, 30)
		cutoff := logBase.Add(50 * time.Second) // attempts 0..49 finished before it
		var deleted int64
		for {
			n, err := b.s.PurgeAttempts(b.ctx, cutoff, 7)
			require.NoError(t, err)
			require.LessOrEqual(t, n, int64(7), "one purge call deletes at most its batch")
			deleted += n
			if n == 0 {
				break
			}
		}
		require.Equal(t, int64(50), deleted)
		for _, bad := range []int{0, queue.MaxPurgeBatch + 1} {
			_, err := b.s.PurgeAttempts(b.ctx, cutoff, bad)
			require.True(t, queue.IsValidation(err), "batch %d must be refused, got %v", bad, err)
			_, err = b.s.PurgeTasks(b.ctx, cutoff, bad)
			require.True(t, queue.IsValidation(err), "batch %d must be refused, got %v", bad, err)
		}
		require.Equal(t, 40, countLog(t, b, queue.LogQuery{}))
		require.Zero(t, countLog(t, b, queue.LogQuery{Until: cutoff}))
	},
	"purge_tasks_takes_only_finished_ones": func(t *testing.T, h Harness) {
		b := setup(t, h)
		ids := writeHistory(t, b, 30)
		pending := b.enqueue(t, queue.NewTask{Queue: "l0", Body: "SELECT 1"})[0]
		running := b.claim(t, "l0", 1)
		require.Equal(t, []int64{pending}, []int64{running[0].ID})
		waiting := b.enqueue(t, queue.NewTask{Queue: "l0", Body: "SELECT 1", Delay: time.Hour})[0]

		// Finished just now by the database clock: an earlier cutoff keeps them.
		n, err := b.s.PurgeTasks(b.ctx, time.Now().Add(-time.Hour), 100)
		require.NoError(t, err)
		require.Zero(t, n, "tasks finished after the cutoff stay")
		var deleted int64
		for {
			n, err := b.s.PurgeTasks(b.ctx, time.Now().Add(time.Hour), 8)
			require.NoError(t, err)
			require.LessOrEqual(t, n, int64(8))
			deleted += n
			if n == 0 {
				break
			}
		}
		require.Equal(t, int64(len(ids)), deleted, "every finished task goes")
		for _, id := range ids {
			_, err := b.s.Get(b.ctx, id)
			require.ErrorIs(t, err, queue.ErrNotFound)
		}
		require.Equal(t, queue.StateRunning, b.get(t, pending).State)
		require.Equal(t, queue.StatePending, b.get(t, waiting).State)
	},
}
