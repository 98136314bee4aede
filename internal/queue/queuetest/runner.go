package queuetest

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"readpast/internal/queue"
)

// span is when the test saw a task run: start after its claim committed, end
// before its finish was sent, so a span is never wider than the database's.
type span struct {
	task       *queue.Task
	start, end time.Time
}

// drain runs `workers` claim loops on queue q until `total` tasks succeeded.
// Each loop claims 1..maxBatch tasks and runs them in parallel; run is called
// while the task is held and may record what it sees.
func drain(t *testing.T, b bundle, q string, workers, maxBatch, total int, run func(*queue.Task)) []span {
	t.Helper()
	var (
		mu       sync.Mutex
		spans    []span
		finished atomic.Int64
		wg       sync.WaitGroup
	)
	deadline := time.Now().Add(2 * time.Minute)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 11))
			for finished.Load() < int64(total) && time.Now().Before(deadline) && !t.Failed() {
				got, err := b.s.Claim(b.ctx, queue.ClaimParams{Queue: q, Owner: "w", Limit: 1 + rng.IntN(maxBatch), LeaseDuration: time.Minute})
				if err != nil {
					t.Errorf("claim: %v", err)
					return
				}
				if len(got) == 0 {
					time.Sleep(time.Millisecond)
					continue
				}
				var inner sync.WaitGroup
				for _, task := range got {
					inner.Add(1)
					go func(task *queue.Task) {
						defer inner.Done()
						sp := span{task: task, start: time.Now()}
						run(task)
						sp.end = time.Now()
						mu.Lock()
						spans = append(spans, sp)
						mu.Unlock()
						res, err := b.s.Finish(b.ctx, []queue.Attempt{attempt(task, queue.OutcomeSucceeded, "")})
						if err == nil {
							err = res[0].Err
						}
						if err != nil {
							t.Errorf("finish %d: %v", task.ID, err)
							return
						}
						finished.Add(1)
					}(task)
				}
				inner.Wait()
			}
		}(w)
	}
	wg.Wait()
	if !t.Failed() && finished.Load() != int64(total) {
		t.Fatalf("only %d of %d tasks finished before the deadline", finished.Load(), total)
	}
	return spans
}

func sleepBetween(lo, hi time.Duration) {
	time.Sleep(lo + time.Duration(rand.Int64N(int64(hi-lo)+1)))
}
