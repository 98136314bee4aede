package queuetest

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
)

// The finished counts and the throughput series come from rollups the store
// keeps in the transactions that change them (docs/QUEUE.md, "Counts and the
// throughput series"): they must be exact, with no drift, whatever runs at once.
var rollupTests = map[string]func(*testing.T, Harness){
	"counts_stay_exact_under_concurrency": func(t *testing.T, h Harness) {
		b := setup(t, h)
		queues := []string{"r0", "r1", "r2"}
		var tasks []queue.NewTask
		for i := 0; i < 600; i++ {
			t := queue.NewTask{Body: "SELECT 1", Queue: queues[i%3], MaxAttempts: 1}
			if i%10 == 0 {
				t.Chain, t.Stage = fmt.Sprintf("ch%d", i/30), i%30/10 // stages 0, 1, 2 of a chain
			}
			tasks = append(tasks, t)
		}
		ids := b.enqueue(t, tasks...)
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for w := 0; w < 6; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(w), 3))
				for empty := 0; empty < 4; {
					got, err := b.s.Claim(b.ctx, queue.ClaimParams{Queue: queues[w%3], Owner: "w", Limit: 1 + rng.IntN(8), LeaseDuration: time.Minute})
					if err != nil {
						errs <- err
						return
					}
					if len(got) == 0 {
						empty++
						time.Sleep(5 * time.Millisecond)
						continue
					}
					var attempts []queue.Attempt
					for _, task := range got {
						o := []queue.Outcome{queue.OutcomeSucceeded, queue.OutcomeFailed, queue.OutcomeCancelled}[rng.IntN(3)]
						attempts = append(attempts, attempt(task, o, "x"))
					}
					if _, err := b.s.Finish(b.ctx, attempts); err != nil {
						errs <- err
						return
					}
				}
			}(w)
		}
		// Meanwhile, operators cancel and retry, and retention purges.
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(99, 3))
			for i := 0; i < 300; i++ {
				id := ids[rng.IntN(len(ids))]
				if rng.IntN(2) == 0 {
					_, _ = b.s.Cancel(b.ctx, id, "op")
				} else {
					_ = b.s.Retry(b.ctx, id, "op")
				}
				if i%50 == 0 {
					if _, err := b.s.PurgeTasks(b.ctx, time.Now().Add(time.Hour), 20); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		for _, q := range queues {
			counts := queueCounts(t, b, q)
			for _, st := range queue.States {
				want := b.env.QueryInt(t, fmt.Sprintf("SELECT count(*) FROM readpast_tasks WHERE queue = '%s' AND state = '%s'", q, st))
				require.Equal(t, want, counts[st], "queue %s, state %s: the count agrees with the tasks", q, st)
			}
		}
	},
	"throughput_counts_every_attempt": func(t *testing.T, h Harness) {
		b := setup(t, h)
		start := time.Now().Add(-time.Minute)
		writeHistory(t, b, 30) // 90 attempts, finished at logBase + k s
		// Attempts of now, through a normal finish.
		b.enqueue(t, queue.NewTask{Body: "SELECT 1", Queue: "tp"}, queue.NewTask{Body: "SELECT 1", Queue: "tp"})
		got := b.claim(t, "tp", 2)
		b.finish(t, got[0], queue.OutcomeSucceeded, "")
		b.finish(t, got[1], queue.OutcomeFailed, "x")
		for _, span := range []queue.Span{queue.SpanMinute, queue.SpanHour} {
			points, err := b.s.Throughput(b.ctx, queue.ThroughputQuery{Span: span, Since: start})
			require.NoError(t, err)
			per := map[queue.Outcome]int64{}
			for _, p := range points {
				require.Equal(t, "tp", p.Queue, "only recent buckets: %+v", p)
				require.False(t, p.At.After(time.Now()), "a bucket starts no later than now")
				per[p.Outcome] += p.N
			}
			require.Equal(t, map[queue.Outcome]int64{queue.OutcomeSucceeded: 1, queue.OutcomeFailed: 1}, per, "span %s", span)

			old, err := b.s.Throughput(b.ctx, queue.ThroughputQuery{Span: span, Since: logBase})
			require.NoError(t, err)
			var n int64
			for _, p := range old {
				n += p.N
			}
			require.Equal(t, int64(92), n, "span %s: every attempt is counted once, by when it finished", span)
		}
		_, err := b.s.Throughput(b.ctx, queue.ThroughputQuery{Span: "day", Since: start})
		require.True(t, queue.IsValidation(err))
		// The history of writeHistory is years old: purging drops its buckets only.
		n, err := b.s.PurgeRollups(b.ctx, time.Now())
		require.NoError(t, err)
		require.Positive(t, n)
		points, err := b.s.Throughput(b.ctx, queue.ThroughputQuery{Span: queue.SpanMinute, Since: logBase})
		require.NoError(t, err)
		require.Len(t, points, 2, "the recent buckets stay")
	},
}
