package queuetest

import (
	"context"
	"testing"
	"time"

	"readpast/internal/queue"
	"readpast/internal/testenv"
)

// BenchmarkHotPath measures the store calls on a task's path, per task, with
// allocations: enqueue (batches of 1000), claim (batch 1 and batch 50), and
// finish (batch 1 and batch 100; each writes the execution-log row in the same
// transaction, so it is also the log-write cost), on a fresh database of d.
//
// grouped_claim_and_finish_batch50_per_task claims and finishes tasks of one
// group (limit 1,000,000) in batches of 50: what a group's tasks cost beside
// ungrouped ones (the group's counter; on SQLite and SQL Server its list index
// moves with each state change, the schema baseline).
func BenchmarkHotPath(b *testing.B, d testenv.Dialect) {
	ctx := context.Background()
	s := testenv.New(b, d).Store
	fill := func(b *testing.B, q, group string, n int) {
		b.Helper()
		batch := make([]queue.NewTask, 0, 1000)
		for done := 0; done < n; done += len(batch) {
			batch = batch[:0]
			for i := 0; i < min(1000, n-done); i++ {
				batch = append(batch, queue.NewTask{Queue: q, Body: "SELECT 1", Group: group})
			}
			if _, err := s.Enqueue(ctx, batch); err != nil {
				b.Fatal(err)
			}
		}
	}
	claim := func(b *testing.B, q string, n int) []*queue.Task {
		got, err := s.Claim(ctx, queue.ClaimParams{Queue: q, Owner: "bench/w", Limit: n, LeaseDuration: time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		return got
	}
	finish := func(b *testing.B, tasks []*queue.Task) {
		now := time.Now()
		a := make([]queue.Attempt, len(tasks))
		for i, t := range tasks {
			a[i] = queue.Attempt{Lease: t.Lease(), Outcome: queue.OutcomeSucceeded, Node: "bench", Worker: "w", StartedAt: now, FinishedAt: now}
		}
		if _, err := s.Finish(ctx, a); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("enqueue_batch1000_per_task", func(b *testing.B) {
		b.ReportAllocs()
		fill(b, "b-enqueue", "", b.N)
	})
	for _, size := range []int{1, 50} {
		q := "b-claim-" + map[int]string{1: "1", 50: "50"}[size]
		b.Run("claim_batch"+map[int]string{1: "1", 50: "50"}[size]+"_per_task", func(b *testing.B) {
			b.StopTimer()
			fill(b, q, "", b.N+size)
			b.ReportAllocs()
			b.StartTimer()
			for done := 0; done < b.N; {
				got := claim(b, q, min(size, b.N-done))
				b.StopTimer()
				finish(b, got)
				b.StartTimer()
				done += len(got)
			}
		})
	}
	for _, size := range []int{1, 100} {
		q := "b-finish-" + map[int]string{1: "1", 100: "100"}[size]
		b.Run("finish_batch"+map[int]string{1: "1", 100: "100"}[size]+"_per_task", func(b *testing.B) {
			b.StopTimer()
			fill(b, q, "", b.N+size)
			b.ReportAllocs()
			for done := 0; done < b.N; {
				got := claim(b, q, min(size, b.N-done))
				b.StartTimer()
				finish(b, got)
				b.StopTimer()
				done += len(got)
			}
		})
	}
	b.Run("grouped_claim_and_finish_batch50_per_task", func(b *testing.B) {
		b.StopTimer()
		if err := s.SetGroupLimit(ctx, "b-g", 1_000_000, "bench"); err != nil {
			b.Fatal(err)
		}
		fill(b, "b-grouped", "b-g", b.N+50)
		b.ReportAllocs()
		b.StartTimer()
		for done := 0; done < b.N; {
			got := claim(b, "b-grouped", min(50, b.N-done))
			finish(b, got)
			done += len(got)
		}
	})
}
