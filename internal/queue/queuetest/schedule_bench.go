package queuetest

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"readpast/internal/queue"
	"readpast/internal/schedule"
	"readpast/internal/testenv"
)

// BenchmarkSchedules measures what schedules cost the store, on a fresh
// database of d: a scheduler's look when nothing is due, among few and among
// many schedules (it reads an index, so the two should cost the same), and a
// look that fires one schedule (the due read, the fire's transaction with its
// enqueue, one task per iteration).
func BenchmarkSchedules(b *testing.B, d testenv.Dialect) {
	ctx := context.Background()
	for _, n := range []int{10, 2000} {
		b.Run(fmt.Sprintf("idle_look_among_%d_schedules", n), func(b *testing.B) {
			s := testenv.New(b, d).Store
			for i := range n {
				_, err := schedule.Editor{Store: s}.CreateSchedule(ctx, queue.ScheduleDef{Name: fmt.Sprintf("s%05d", i), Cron: "0 1 1 1 *",
					Task: queue.ScheduleTask{Body: "SELECT 1"}}, "bench")
				if err != nil {
					b.Fatal(err)
				}
			}
			sc := schedule.New(s, slog.New(slog.DiscardHandler), schedule.Config{})
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if p, err := sc.FireDue(ctx); err != nil || len(p.Fired) > 0 {
					b.Fatal(err, p.Fired)
				}
			}
		})
	}
	b.Run("look_that_fires_one", func(b *testing.B) {
		s := testenv.New(b, d).Store
		first, err := schedule.Editor{Store: s}.CreateSchedule(ctx, queue.ScheduleDef{Name: "tick", Cron: "* * * * * *", Overlap: queue.OverlapAllow,
			Task: queue.ScheduleTask{Body: "SELECT 1"}}, "bench")
		if err != nil {
			b.Fatal(err)
		}
		now := first.NextFireAt
		sc := schedule.New(s, slog.New(slog.DiscardHandler), schedule.Config{Clock: func() time.Time { return now }})
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if p, err := sc.FireDue(ctx); err != nil || len(p.Fired) != 1 || !p.Fired[0].Won {
				b.Fatal(err, p.Fired)
			}
			now = now.Add(time.Second)
		}
	})
}
