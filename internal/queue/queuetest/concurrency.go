package queuetest

import (
	"context"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
)

var concurrencyTests = map[string]func(*testing.T, Harness){
	"16_claimers_20000_tasks_each_claimed_once": func(t *testing.T, h Harness) {
		b := setup(t, h)
		const total, claimers = 20000, 16
		batch := make([]queue.NewTask, 1000)
		for i := range batch {
			batch[i] = queue.NewTask{Body: "SELECT 1", Priority: intp(i % 3)}
		}
		for i := 0; i < total/len(batch); i++ {
			b.enqueue(t, batch...)
		}
		var seen sync.Map
		var claimed, dup atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, claimers)
		for w := 0; w < claimers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(w), 7))
				for empty := 0; empty < 3; {
					got, err := b.s.Claim(b.ctx, queue.ClaimParams{Queue: queue.DefaultQueue, Owner: "w", Limit: 1 + rng.IntN(50), LeaseDuration: time.Minute})
					if err != nil {
						errs <- err
						return
					}
					if len(got) == 0 {
						empty++
						continue
					}
					attempts := make([]queue.Attempt, len(got))
					for i, task := range got {
						if _, loaded := seen.LoadOrStore(task.ID, w); loaded {
							dup.Add(1)
						}
						attempts[i] = attempt(task, queue.OutcomeSucceeded, "")
					}
					claimed.Add(int64(len(got)))
					res, err := b.s.Finish(b.ctx, attempts)
					if err != nil {
						errs <- err
						return
					}
					for _, r := range res {
						if r.Err != nil {
							errs <- r.Err
							return
						}
					}
				}
			}(w)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err, "a claimer failed")
		}
		require.Zero(t, dup.Load(), "no task may be claimed twice")
		require.Equal(t, int64(total), claimed.Load(), "every task must be claimed")
		counts := queueCounts(t, b, queue.DefaultQueue)
		require.Equal(t, int64(total), counts[queue.StateSucceeded])
		require.Zero(t, counts[queue.StatePending]+counts[queue.StateRunning])
	},
	"claimers_do_not_wait_on_each_other": func(t *testing.T, h Harness) {
		b := setup(t, h)
		for i := 0; i < 20; i++ {
			b.enqueue(t, queue.NewTask{Body: "SELECT 1"})
		}
		inside, release, doneA := make(chan struct{}), make(chan struct{}), make(chan []*queue.Task, 1)
		var releaseOnce sync.Once
		letGo := func() { releaseOnce.Do(func() { close(release) }) }
		t.Cleanup(letGo) // a failed assertion must not leave claimer A blocked in its hook
		go func() {
			ctxA := queue.WithClaimHook(b.ctx, func() { close(inside); <-release })
			got, err := b.s.Claim(ctxA, queue.ClaimParams{Queue: queue.DefaultQueue, Owner: "A", Limit: 5, LeaseDuration: time.Minute})
			if err != nil {
				t.Errorf("claimer A: %v", err)
			}
			doneA <- got
		}()
		select {
		case <-inside:
		case <-time.After(30 * time.Second):
			t.Fatal("claimer A never reached its commit")
		}
		if h.SerialWriters {
			serialWritersDoNotBlockReaders(t, b, letGo, doneA)
			return
		}
		ctxB, cancel := context.WithTimeout(b.ctx, 10*time.Second)
		defer cancel()
		start := time.Now()
		gotB, err := b.s.Claim(ctxB, queue.ClaimParams{Queue: queue.DefaultQueue, Owner: "B", Limit: 5, LeaseDuration: time.Minute})
		elapsed := time.Since(start)
		require.NoError(t, err, "claimer B must not wait for A's open transaction")
		select {
		case <-doneA:
			t.Fatal("claimer A committed before B returned: the test proved nothing")
		default:
		}
		t.Logf("claimer B returned %d tasks in %s while A's claim transaction was open", len(gotB), elapsed)
		require.Len(t, gotB, 5, "B must get other claimable tasks")
		letGo()
		gotA := <-doneA
		require.Len(t, gotA, 5)
		require.Empty(t, intersect(ids(gotA), ids(gotB)), "A and B must get different tasks")
	},
}

// serialWritersDoNotBlockReaders is the SQLite form of the non-blocking proof:
// while a claim transaction is held open, dashboard reads complete and a second
// claimer waits only for that one short transaction.
func serialWritersDoNotBlockReaders(t *testing.T, b bundle, release func(), doneA chan []*queue.Task) {
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	_, err := b.s.List(ctx, queue.ListParams{State: queue.StatePending})
	require.NoError(t, err, "a read must not wait for an open claim")
	_, err = b.s.Queues(ctx)
	require.NoError(t, err, "a read must not wait for an open claim")
	doneB := make(chan []*queue.Task, 1)
	go func() {
		got, err := b.s.Claim(b.ctx, queue.ClaimParams{Queue: queue.DefaultQueue, Owner: "B", Limit: 5, LeaseDuration: time.Minute})
		if err != nil {
			t.Errorf("claimer B: %v", err)
		}
		doneB <- got
	}()
	release()
	gotA, gotB := <-doneA, <-doneB
	require.Len(t, gotA, 5)
	require.Len(t, gotB, 5)
	require.Empty(t, intersect(ids(gotA), ids(gotB)))

	// How long one claim transaction holds the writer, with 5,000 tasks pending.
	batch := make([]queue.NewTask, 5000)
	for i := range batch {
		batch[i] = queue.NewTask{Body: "SELECT 1", Queue: "short"}
	}
	b.enqueue(t, batch...)
	var held []time.Duration
	for i := 0; i < 200; i++ {
		var start time.Time
		hook := queue.WithClaimHook(b.ctx, func() { held = append(held, time.Since(start)) })
		start = time.Now()
		_, err := b.s.Claim(hook, queue.ClaimParams{Queue: "short", Owner: "w", Limit: 10, LeaseDuration: time.Minute})
		require.NoError(t, err)
	}
	sort.Slice(held, func(i, j int) bool { return held[i] < held[j] })
	t.Logf("claim of 10 from 5,000 pending holds the SQLite writer: p50 %s, p99 %s", held[len(held)/2], held[len(held)*99/100])
}

func intersect(a, b []int64) []int64 {
	in := map[int64]bool{}
	for _, v := range a {
		in[v] = true
	}
	var out []int64
	for _, v := range b {
		if in[v] {
			out = append(out, v)
		}
	}
	return out
}

func queueCounts(t *testing.T, b bundle, name string) map[queue.State]int64 {
	t.Helper()
	qs, err := b.s.Queues(b.ctx)
	require.NoError(t, err)
	for _, q := range qs {
		if q.Name == name {
			return q.Counts
		}
	}
	t.Fatalf("queue %s not listed", name)
	return nil
}
