package queuetest

import (
	"context"
	"testing"
	"time"

	"readpast/internal/queue"
	"readpast/internal/testenv"
)

// BenchmarkTargetClaim measures one claim of a batch of 50, per task, as a
// node makes it (docs/TARGETS.md, "What a claim costs"): with no target
// filter (nil, what the store's callers outside a node pass), with a
// node's filter (the names it serves and "" for the tasks that name none),
// and with that filter behind a backlog of 10,000 ready tasks of a target
// the node does not serve, ahead of its own in claim order.
func BenchmarkTargetClaim(b *testing.B, d testenv.Dialect) {
	ctx := context.Background()
	s := testenv.New(b, d).Store
	fill := func(b *testing.B, q, target string, prio, n int) {
		b.Helper()
		batch := make([]queue.NewTask, 0, 1000)
		for done := 0; done < n; done += len(batch) {
			batch = batch[:0]
			for i := 0; i < min(1000, n-done); i++ {
				batch = append(batch, queue.NewTask{Queue: q, Body: "SELECT 1", Target: target, Priority: &prio})
			}
			if _, err := s.Enqueue(ctx, batch); err != nil {
				b.Fatal(err)
			}
		}
	}
	node := []string{"store", "default", "db1", ""}
	run := func(name, q string, targets []string, backlog int) {
		b.Run(name, func(b *testing.B) {
			b.StopTimer()
			if backlog > 0 {
				fill(b, q, "elsewhere", 1, backlog)
			}
			fill(b, q, "", 100, b.N+50)
			b.ReportAllocs()
			b.StartTimer()
			for done := 0; done < b.N; {
				got, err := s.Claim(ctx, queue.ClaimParams{Queue: q, Owner: "bench/w", Limit: min(50, b.N-done), LeaseDuration: time.Minute, Targets: targets})
				if err != nil {
					b.Fatal(err)
				}
				if len(got) == 0 {
					b.Fatal("claimed nothing")
				}
				done += len(got)
			}
		})
	}
	run("claim_batch50_no_filter_per_task", "t-nofilter", nil, 0)
	run("claim_batch50_node_filter_per_task", "t-filter", node, 0)
	run("claim_batch50_behind_10k_of_another_target_per_task", "t-behind", node, 10_000)
}
