// Package webtest holds what the web packages' tests share: a store filled
// with history as a working day leaves it. Only tests import it.
package webtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/schedule"
	"readpast/internal/testenv"
)

// SeedHistory runs n tasks of queue q through claim and finish by hand, with
// attempt times spread over the last hour, so the throughput chart has
// something to draw. failEvery makes every n-th attempt fail.
func SeedHistory(t *testing.T, ctx context.Context, s queue.Store, q string, n, failEvery int) {
	SeedAttempts(t, ctx, s, q, n, failEvery, true)
}

// SeedAttempts is SeedHistory; with spread false every attempt finishes now.
func SeedAttempts(t *testing.T, ctx context.Context, s queue.Store, q string, n, failEvery int, spread bool) {
	t.Helper()
	tasks := make([]queue.NewTask, n)
	for i := range tasks {
		tasks[i] = queue.NewTask{Queue: q, Body: fmt.Sprintf("SELECT count(*) FROM sqlite_master -- load partition %d", i), MaxAttempts: 1}
	}
	_, err := s.Enqueue(ctx, tasks)
	require.NoError(t, err)
	claimed, err := s.Claim(ctx, queue.ClaimParams{Queue: q, Owner: "history/w1", Limit: n, LeaseDuration: time.Minute})
	require.NoError(t, err)
	now := time.Now()
	attempts := make([]queue.Attempt, len(claimed))
	for i, c := range claimed {
		// More work recently, with a quiet stretch in the middle of the hour.
		ago := time.Duration(rand.ExpFloat64()*15*float64(time.Minute)) % (58 * time.Minute)
		if ago > 25*time.Minute && ago < 32*time.Minute {
			ago += 8 * time.Minute
		}
		fin := now.Add(-ago - 30*time.Second)
		if !spread {
			fin = now
		}
		dur := time.Duration(200+rand.IntN(20_000)) * time.Millisecond
		a := queue.Attempt{Lease: c.Lease(), Outcome: queue.OutcomeSucceeded, Node: "history", Worker: "w1",
			SessionID: fmt.Sprint(52 + i%40), StartedAt: fin.Add(-dur), FinishedAt: fin, RowsAffected: int64(rand.IntN(5000))}
		if failEvery > 0 && i%failEvery == 0 {
			a.Outcome, a.Error = queue.OutcomeFailed, "Msg 1205, Level 13: Transaction was deadlocked on lock resources with another process"
		}
		attempts[i] = a
	}
	_, err = s.Finish(ctx, attempts)
	require.NoError(t, err)
}

// SeedDemo fills the store with what a working day looks like: several queues
// with history, failures, a delayed task, a chain waiting on its first stage,
// a paused queue, tasks running now (when a node runs them), and schedules:
// a nightly job in Paris time that has run, an hourly one, a paused one.
func SeedDemo(t *testing.T, ctx context.Context, s queue.Store) {
	t.Helper()
	four, two, ten := 4, 2, 10
	paused := true
	update := func(name string, u queue.QueueUpdate) {
		u.Actor = "seed"
		_, err := s.UpdateQueue(ctx, name, u)
		require.NoError(t, err)
	}
	enqueue := func(tasks ...queue.NewTask) {
		_, err := s.Enqueue(ctx, tasks)
		require.NoError(t, err)
	}
	update("etl", queue.QueueUpdate{Workers: &four})
	update("billing", queue.QueueUpdate{Paused: &paused})
	SeedHistory(t, ctx, s, "history", 600, 23)
	SeedHistory(t, ctx, s, "reports", 120, 0)
	update("reports", queue.QueueUpdate{Workers: &two, MaxRunning: &two})

	enqueue(
		queue.NewTask{Queue: "etl", Body: "CREATE TABLE IF NOT EXISTS staging_orders (id int, total int)\nGO\nINSERT INTO staging_orders VALUES (1, 10)"},
		queue.NewTask{Queue: "etl", Body: "SELECT * FROM missing_table_for_demo", MaxAttempts: 1},
		queue.NewTask{Queue: "reports", Body: "SELECT 1 -- nightly revenue report", Delay: 2 * time.Hour},
		queue.NewTask{Queue: "billing", Body: "UPDATE invoices SET status = 'sent' WHERE batch = 42", Group: "invoices"},
		queue.NewTask{Queue: "billing", Body: "EXEC dbo.close_period @month = '2025-06'", Group: "invoices"},
	)
	long := testenv.SleepBody(t, s.Dialect(), 10*time.Minute) // until the test ends
	enqueue(
		queue.NewTask{Queue: "maintenance", Chain: "reindex-2025-06", Stage: 0, Body: long, Timeout: 10 * time.Minute},
		queue.NewTask{Queue: "maintenance", Chain: "reindex-2025-06", Stage: 1, Body: "ANALYZE"},
		queue.NewTask{Queue: "maintenance", Chain: "reindex-2025-06", Stage: 2, Body: "VACUUM"},
	)
	enqueue(queue.NewTask{Queue: "etl", Body: long + " -- long load", Priority: &ten})

	one := 1
	for _, d := range []queue.ScheduleDef{
		{Name: "nightly-index-rebuild", Cron: "0 1 * * *", TimeZone: "Europe/Paris",
			Task: queue.ScheduleTask{Queue: "maintenance", Body: "REINDEX", MaxAttempts: one, Timeout: 2 * time.Hour}},
		{Name: "hourly-stats", Cron: "@hourly", Overlap: queue.OverlapAllow,
			Task: queue.ScheduleTask{Queue: "reports", Body: "ANALYZE"}},
		{Name: "month-end-close", Cron: "0 2 28-31 * *", TimeZone: "America/New_York", Paused: true, Misfire: queue.MisfireSkip,
			Task: queue.ScheduleTask{Queue: "billing", Body: "EXEC dbo.close_period"}},
	} {
		_, err := schedule.Editor{Store: s}.CreateSchedule(ctx, d, "seed")
		require.NoError(t, err)
	}
	_, err := s.RunSchedule(ctx, "nightly-index-rebuild", "seed", nil)
	require.NoError(t, err)
}
