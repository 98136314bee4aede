package selftest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"readpast/internal/queue"
)

// probeSchema migrates the scratch up, down and up again: the schema the
// binary embeds can be created and removed on this server, and a second
// Migrate is a no-op. Its last check says whether the others can run.
func probeSchema(ctx context.Context, e *env) []Check {
	c := timed(Check{Name: "migrations", Guarantee: "the schema goes up and down whole (migrate, migrate down)"}, func(c *Check) {
		if err := e.a.Migrate(ctx); err != nil {
			c.failed("migrating up", err)
			return
		}
		st, err := e.a.SchemaVersion(ctx)
		if err != nil {
			c.failed("reading the schema version", err)
			return
		}
		if err := e.a.MigrateDown(ctx); err != nil {
			c.failed("migrating down", err)
			return
		}
		down, err := e.a.SchemaVersion(ctx)
		if err != nil || down.Version != 0 {
			c.failed("after migrating down", fmt.Errorf("version %d (%v), want none", down.Version, err))
			return
		}
		if err := e.a.Migrate(ctx); err != nil {
			c.failed("migrating up again", err)
			return
		}
		if err := e.a.Migrate(ctx); err != nil {
			c.failed("a second migrate must be a no-op", err)
			return
		}
		c.passed("up to version %d, down to none, up again; a second migrate changed nothing", st.Version)
	})
	return []Check{c}
}

// probeMigrateDown reverts the scratch's schema at the end: the down
// migrations leave no ReadPast table behind, even after the probes' load.
func probeMigrateDown(ctx context.Context, e *env) Check {
	return timed(Check{Name: "migrate down", Guarantee: "uninstalling removes every table, after use too"}, func(c *Check) {
		if err := e.a.MigrateDown(ctx); err != nil {
			c.failed("migrating down after the probes", err)
			return
		}
		c.passed("every migration reverted after the probes' %d-second load", int(e.cfg.Soak.Seconds()))
	})
}

// probeRoundTrip follows one task through its life: enqueue, claim,
// heartbeat, finish, its log row, its state.
func probeRoundTrip(ctx context.Context, e *env) []Check {
	return []Check{timed(Check{Name: "round trip", Guarantee: "enqueue, claim, heartbeat, finish and its log row (SPEC §3–6)"}, func(c *Check) {
		res, err := e.a.Enqueue(ctx, []queue.NewTask{{Queue: "st-round", Body: "SELECT 1", CreatedBy: "selftest"}})
		if err != nil {
			c.failed("enqueueing", err)
			return
		}
		start := time.Now()
		got, err := e.b.Claim(ctx, queue.ClaimParams{Queue: "st-round", Owner: "selftest/w1", Limit: 5, LeaseDuration: time.Minute})
		claimTook := time.Since(start)
		if err != nil || len(got) != 1 || got[0].ID != res[0].ID {
			c.failed("claiming", fmt.Errorf("got %d tasks (%v), want task %d", len(got), err, res[0].ID))
			return
		}
		hb, err := e.b.Heartbeat(ctx, []queue.Lease{got[0].Lease()}, time.Minute)
		if err != nil || len(hb.Lost) > 0 {
			c.failed("heartbeating", fmt.Errorf("lost %v (%v)", hb.Lost, err))
			return
		}
		now := time.Now()
		fin, err := e.b.Finish(ctx, []queue.Attempt{{Lease: got[0].Lease(), Outcome: queue.OutcomeSucceeded, Node: "selftest",
			Worker: "w1", SessionID: "1", StartedAt: now.Add(-time.Millisecond), FinishedAt: now, RowsAffected: 1}})
		if err == nil && fin[0].Err != nil {
			err = fin[0].Err
		}
		if err != nil {
			c.failed("finishing", err)
			return
		}
		task, err := e.a.Get(ctx, res[0].ID)
		if err != nil || task.State != queue.StateSucceeded {
			c.failed("reading the task back", fmt.Errorf("state %v (%v), want succeeded", stateOf(task), err))
			return
		}
		recs, err := e.a.TaskAttempts(ctx, res[0].ID)
		if err != nil || len(recs) != 1 || recs[0].Outcome != queue.OutcomeSucceeded {
			c.failed("reading its log", fmt.Errorf("%d rows (%v), want one succeeded attempt", len(recs), err))
			return
		}
		c.passed("task %d enqueued, claimed in %s, heartbeated, finished succeeded, one log row", res[0].ID, ms(claimTook))
	})}
}

// probeExactlyOnce drains tasks with eight claimers on two stores (their own
// connection pools) and counts how often each task was handed out.
func probeExactlyOnce(ctx context.Context, e *env) []Check {
	return []Check{timed(Check{Name: "exactly once", Guarantee: "concurrent claimers take every task exactly once (§4.1)"}, func(c *Check) {
		const q, claimers = "st-once", 8
		if err := enqueueMany(ctx, e.a, e.cfg.Tasks, func(i int) queue.NewTask {
			return queue.NewTask{Queue: q, Body: "SELECT 1", Priority: ptr(i % 3)}
		}); err != nil {
			c.failed("enqueueing", err)
			return
		}
		var (
			seen       sync.Map
			claimed    atomic.Int64
			duplicates atomic.Int64
			firstErr   error
			once       sync.Once
			wg         sync.WaitGroup
		)
		start := time.Now()
		for w := 0; w < claimers; w++ {
			s := []queue.Store{e.a, e.b}[w%2]
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(w), 1))
				for empty := 0; empty < 3 && ctx.Err() == nil; {
					got, err := s.Claim(ctx, queue.ClaimParams{Queue: q, Owner: fmt.Sprintf("selftest/w%d", w), Limit: 1 + rng.IntN(20), LeaseDuration: time.Minute})
					if err == nil {
						err = finishAll(ctx, s, got, queue.OutcomeSucceeded)
					}
					if err != nil {
						once.Do(func() { firstErr = err })
						return
					}
					if len(got) == 0 {
						empty++
						continue
					}
					for _, t := range got {
						if _, dup := seen.LoadOrStore(t.ID, w); dup {
							duplicates.Add(1)
						}
					}
					claimed.Add(int64(len(got)))
				}
			}(w)
		}
		wg.Wait()
		took := time.Since(start)
		switch {
		case firstErr != nil:
			c.failed("a claimer failed", firstErr)
		case duplicates.Load() > 0:
			c.Status, c.Evidence = Fail, fmt.Sprintf("%d tasks were handed out twice", duplicates.Load())
		case claimed.Load() != int64(e.cfg.Tasks):
			c.Status, c.Evidence = Fail, fmt.Sprintf("%d of %d tasks were claimed", claimed.Load(), e.cfg.Tasks)
		default:
			c.passed("%d tasks, %d claimers on 2 connection pools: each claimed once, none missed, %s (%.0f tasks/s)",
				e.cfg.Tasks, claimers, took.Round(time.Millisecond), float64(e.cfg.Tasks)/took.Seconds())
		}
	})}
}

// probeGroupsAndChains drains grouped and chained tasks with six workers and
// watches what runs at once: a group never above its limit, a chain's stage
// never before the stages below it have finished.
func probeGroupsAndChains(ctx context.Context, e *env) []Check {
	return []Check{timed(Check{Name: "groups and chains", Guarantee: "group limits and chain order hold under concurrency (§4.3–4)"}, func(c *Check) {
		const q = "st-order"
		limits := map[string]int{"st-g1": 1, "st-g2": 1, "st-g3": 2}
		if err := e.a.SetGroupLimit(ctx, "st-g3", 2, "selftest"); err != nil {
			c.failed("setting a group limit", err)
			return
		}
		var tasks []queue.NewTask
		for i := 0; i < 36; i++ {
			tasks = append(tasks, queue.NewTask{Queue: q, Body: "SELECT 1", Group: fmt.Sprintf("st-g%d", i%3+1)})
		}
		for stage := 1; stage <= 4; stage++ {
			for i := 0; i < 3; i++ {
				tasks = append(tasks, queue.NewTask{Queue: q, Body: "SELECT 1", Chain: "st-chain", Stage: stage})
			}
		}
		if _, err := e.a.Enqueue(ctx, tasks); err != nil {
			c.failed("enqueueing", err)
			return
		}
		var (
			mu       sync.Mutex
			running  = map[string]int{}
			peak     = map[string]int{}
			stageEnd = map[int]time.Time{}
			starts   []struct {
				stage int
				at    time.Time
			}
		)
		err := drain(ctx, e, q, 6, len(tasks), func(t *queue.Task) {
			mu.Lock()
			running[t.Group]++
			peak[t.Group] = max(peak[t.Group], running[t.Group])
			if t.Chain != "" {
				starts = append(starts, struct {
					stage int
					at    time.Time
				}{t.Stage, time.Now()})
			}
			mu.Unlock()
			time.Sleep(time.Duration(2+rand.IntN(6)) * time.Millisecond)
			mu.Lock()
			running[t.Group]--
			if t.Chain != "" && time.Now().After(stageEnd[t.Stage]) {
				stageEnd[t.Stage] = time.Now()
			}
			mu.Unlock()
		})
		if err != nil {
			c.failed("draining", err)
			return
		}
		for g, limit := range limits {
			if peak[g] > limit {
				c.Status, c.Evidence = Fail, fmt.Sprintf("group %s ran %d tasks at once, over its limit %d", g, peak[g], limit)
				return
			}
		}
		for _, s := range starts {
			for lower := 1; lower < s.stage; lower++ {
				if s.at.Before(stageEnd[lower]) {
					c.Status, c.Evidence = Fail, fmt.Sprintf("a task of stage %d started before stage %d had finished", s.stage, lower)
					return
				}
			}
		}
		c.passed("%d tasks by 6 workers: peak running per group %v within limits %v; 4 chain stages in order", len(tasks), peak, limits)
	})}
}

// drain claims and runs tasks of q with workers goroutines (on both stores)
// until total have finished, run standing for each task's body.
func drain(ctx context.Context, e *env, q string, workers, total int, run func(*queue.Task)) error {
	var (
		done     atomic.Int64
		wg       sync.WaitGroup
		firstErr error
		once     sync.Once
	)
	for w := 0; w < workers; w++ {
		s := []queue.Store{e.a, e.b}[w%2]
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for done.Load() < int64(total) && ctx.Err() == nil {
				got, err := s.Claim(ctx, queue.ClaimParams{Queue: q, Owner: fmt.Sprintf("selftest/d%d", w), Limit: 1 + w%3, LeaseDuration: time.Minute})
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				if len(got) == 0 {
					time.Sleep(5 * time.Millisecond)
					continue
				}
				var inner sync.WaitGroup
				for _, t := range got {
					inner.Add(1)
					go func() { defer inner.Done(); run(t) }()
				}
				inner.Wait()
				if err := finishAll(ctx, s, got, queue.OutcomeSucceeded); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				done.Add(int64(len(got)))
			}
		}(w)
	}
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil {
		firstErr = fmt.Errorf("%d of %d tasks finished before the probe's time ran out: %w", done.Load(), total, ctx.Err())
	}
	return firstErr
}

// finishAll ends every task with the outcome.
func finishAll(ctx context.Context, s queue.Store, tasks []*queue.Task, o queue.Outcome) error {
	if len(tasks) == 0 {
		return nil
	}
	now := time.Now()
	attempts := make([]queue.Attempt, len(tasks))
	for i, t := range tasks {
		attempts[i] = queue.Attempt{Lease: t.Lease(), Outcome: o, Node: "selftest", Worker: "w", StartedAt: now, FinishedAt: now}
	}
	res, err := s.Finish(ctx, attempts)
	if err != nil {
		return err
	}
	for _, r := range res {
		if r.Err != nil {
			return r.Err
		}
	}
	return nil
}

// enqueueMany enqueues n tasks in batches of 500.
func enqueueMany(ctx context.Context, s queue.Store, n int, task func(i int) queue.NewTask) error {
	for i := 0; i < n; {
		batch := make([]queue.NewTask, 0, min(500, n-i))
		for ; i < n && len(batch) < cap(batch); i++ {
			batch = append(batch, task(i))
		}
		if _, err := s.Enqueue(ctx, batch); err != nil {
			return err
		}
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

func stateOf(t *queue.Task) queue.State {
	if t == nil {
		return ""
	}
	return t.State
}
