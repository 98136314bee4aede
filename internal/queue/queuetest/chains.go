package queuetest

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/testenv"
)

var chainTests = map[string]func(*testing.T, Harness){
	// The seed case: stages 100×4, 200×2, 300×1, 400×2, 500×1 with 5 workers.
	"seed_stages_run_in_order_and_in_parallel": func(t *testing.T, h Harness) {
		b := setup(t, h)
		// Two tasks of a stage finishing at once: SQL Server serialises them
		// on the chain row (UPDLOCK), so the second sees the first finished
		// and opens the next stage. Where UPDLOCK locks nothing, each sees
		// the other still running and the next stage is never opened.
		b.env.SkipOnBabelfish(t, testenv.BabelfishLockHints)
		var tasks []queue.NewTask
		for stage, n := range map[int]int{100: 4, 200: 2, 300: 1, 400: 2, 500: 1} {
			for i := 0; i < n; i++ {
				tasks = append(tasks, queue.NewTask{Body: "SELECT 1", Queue: "etl", Chain: "seed", Stage: stage})
			}
		}
		rand.Shuffle(len(tasks), func(i, j int) { tasks[i], tasks[j] = tasks[j], tasks[i] })
		b.enqueue(t, tasks...)
		// A task of stage 100 runs until a second one has started too (or
		// 20 s have passed), so the stage's tasks overlap whenever the store
		// lets them run side by side, however slow the server is.
		var started atomic.Int64
		spans := drain(t, b, "etl", 5, 1, len(tasks), func(task *queue.Task) {
			if task.Stage == 100 {
				started.Add(1)
				for end := time.Now().Add(20 * time.Second); started.Load() < 2 && time.Now().Before(end); {
					time.Sleep(5 * time.Millisecond)
				}
			}
			sleepBetween(30*time.Millisecond, 60*time.Millisecond)
		})
		for _, s := range spans {
			for _, lower := range spans {
				if lower.task.Stage < s.task.Stage {
					require.False(t, s.start.Before(lower.end), "task %d (stage %d) started before task %d (stage %d) finished",
						s.task.ID, s.task.Stage, lower.task.ID, lower.task.Stage)
				}
			}
		}
		overlapping := 0
		for i, a := range spans {
			for _, c := range spans[i+1:] {
				if a.task.Stage == 100 && c.task.Stage == 100 && a.start.Before(c.end) && c.start.Before(a.end) {
					overlapping++
				}
			}
		}
		require.Positive(t, overlapping, "tasks of one stage must run in parallel")
	},
	"waiting_reason_names_the_stage": func(t *testing.T, h Harness) {
		b := setup(t, h)
		id := b.enqueue(t, queue.NewTask{Body: "SELECT 1", Chain: "c", Stage: 1}, queue.NewTask{Body: "SELECT 1", Chain: "c", Stage: 2})
		require.True(t, b.get(t, id[1]).ChainWait)
		require.Contains(t, b.get(t, id[1]).Why, "stage 1")
		got := b.claim(t, queue.DefaultQueue, 10)
		require.Equal(t, []int64{id[0]}, ids(got), "only stage 1 may run")
		require.Empty(t, b.claim(t, queue.DefaultQueue, 10), "stage 2 waits while stage 1 runs")
		b.finish(t, got[0], queue.OutcomeSucceeded, "")
		require.Equal(t, []int64{id[1]}, ids(b.claim(t, queue.DefaultQueue, 10)))
	},
	"appending_to_a_running_chain_waits": func(t *testing.T, h Harness) {
		b := setup(t, h)
		b.enqueue(t, queue.NewTask{Body: "SELECT 1", Chain: "c", Stage: 1})
		running := b.claim(t, queue.DefaultQueue, 1)
		later := b.enqueue(t, queue.NewTask{Body: "SELECT 1", Chain: "c", Stage: 5})[0]
		require.Empty(t, b.claim(t, queue.DefaultQueue, 10))
		b.finish(t, running[0], queue.OutcomeSucceeded, "")
		require.Equal(t, []int64{later}, ids(b.claim(t, queue.DefaultQueue, 10)))
	},
	"failure_cancels_later_stages_and_retry_reopens_them": func(t *testing.T, h Harness) {
		b := setup(t, h)
		id := b.enqueue(t,
			queue.NewTask{Body: "SELECT 1", Chain: "f", Stage: 1, MaxAttempts: 1},
			queue.NewTask{Body: "SELECT 1", Chain: "f", Stage: 1},
			queue.NewTask{Body: "SELECT 1", Chain: "f", Stage: 2},
			queue.NewTask{Body: "SELECT 1", Chain: "f", Stage: 3})
		got := b.claim(t, queue.DefaultQueue, 10)
		require.ElementsMatch(t, id[:2], ids(got))
		byID := map[int64]*queue.Task{got[0].ID: got[0], got[1].ID: got[1]}
		res := b.finish(t, byID[id[0]], queue.OutcomeFailed, "boom")
		require.Equal(t, queue.StateFailed, res.State)
		for _, later := range id[2:] {
			task := b.get(t, later)
			require.Equal(t, queue.StateCancelled, task.State, "a failed stage cancels the later stages")
			require.Contains(t, task.LastError, "chain f")
		}
		require.Equal(t, queue.StateRunning, b.get(t, id[1]).State, "the same stage carries on")
		b.finish(t, byID[id[1]], queue.OutcomeSucceeded, "")

		require.NoError(t, b.s.Retry(b.ctx, id[0], "carol"))
		require.Equal(t, queue.StatePending, b.get(t, id[2]).State, "retry reopens the chain")
		require.True(t, b.get(t, id[2]).ChainWait)
		again := b.claim(t, queue.DefaultQueue, 10)
		require.Equal(t, []int64{id[0]}, ids(again))
		b.finish(t, again[0], queue.OutcomeSucceeded, "")
		require.Equal(t, []int64{id[2]}, ids(b.claim(t, queue.DefaultQueue, 10)))
	},
	"a_reopened_delayed_stage_waits_for_its_time": func(t *testing.T, h Harness) {
		b := setup(t, h)
		id := b.enqueue(t,
			queue.NewTask{Body: "SELECT 1", Chain: "d", Stage: 1, MaxAttempts: 1},
			queue.NewTask{Body: "SELECT 1", Chain: "d", Stage: 2, Delay: time.Hour})
		got := b.claim(t, queue.DefaultQueue, 10)
		require.Equal(t, id[:1], ids(got))
		b.finish(t, got[0], queue.OutcomeFailed, "boom")
		require.Equal(t, queue.StateCancelled, b.get(t, id[1]).State, "the failure cancels stage 2")
		require.NoError(t, b.s.Retry(b.ctx, id[0], "carol"))
		again := b.claim(t, queue.DefaultQueue, 10)
		require.Equal(t, id[:1], ids(again))
		b.finish(t, again[0], queue.OutcomeSucceeded, "")
		require.Empty(t, b.claim(t, queue.DefaultQueue, 10), "stage 2 is open but delayed an hour: not claimable yet")
		require.Contains(t, b.get(t, id[1]).Why, "delayed", "and it says so")
	},
	"continue_on_failure_runs_later_stages": func(t *testing.T, h Harness) {
		b := setup(t, h)
		id := b.enqueue(t,
			queue.NewTask{Body: "SELECT 1", Chain: "k", Stage: 1, MaxAttempts: 1, ContinueOnFailure: true},
			queue.NewTask{Body: "SELECT 1", Chain: "k", Stage: 2})
		got := b.claim(t, queue.DefaultQueue, 10)
		b.finish(t, got[0], queue.OutcomeFailed, "boom")
		require.Equal(t, []int64{id[1]}, ids(b.claim(t, queue.DefaultQueue, 10)))
	},
	"cancelling_a_pending_stage_cancels_the_rest": func(t *testing.T, h Harness) {
		b := setup(t, h)
		id := b.enqueue(t, queue.NewTask{Body: "SELECT 1", Chain: "x", Stage: 1}, queue.NewTask{Body: "SELECT 1", Chain: "x", Stage: 2})
		st, err := b.s.Cancel(b.ctx, id[0], "dave")
		require.NoError(t, err)
		require.Equal(t, queue.StateCancelled, st)
		require.Equal(t, queue.StateCancelled, b.get(t, id[1]).State)
		require.Empty(t, b.claim(t, queue.DefaultQueue, 10))
	},
}
