package selftest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"readpast/internal/dialect"
	"readpast/internal/queue"
)

// probeSoak runs every writer at once for cfg.Soak — claims, finishes
// (succeeded, failed, abandoned to expire), heartbeats, reclaims, enqueues of
// grouped, chained and keyed tasks, retries and purges — on short leases, and
// counts failed operations and the deadlocks the server reports. Then it
// checks that the bookkeeping agrees with the tasks: group counters with the
// tasks that run, finished counts with the finished tasks.
func probeSoak(ctx context.Context, e *env) []Check {
	c := timed(Check{Name: "deadlock soak", Guarantee: "every writer at once: no operation fails, no deadlock is left to the caller (lock order, §4)"}, func(c *Check) {
		before, counted := serverDeadlocks(ctx, e)
		ops, errs := runSoak(ctx, e)
		after, _ := serverDeadlocks(ctx, e)
		deadlocks := "not readable with this login"
		if counted {
			deadlocks = fmt.Sprintf("%d", after-before)
		}
		if len(errs) > 0 {
			c.Status, c.Evidence = Fail, fmt.Sprintf("%d of %d operations failed (server deadlocks: %s); first: %v", len(errs), ops.total(), deadlocks, errs[0])
			return
		}
		c.passed("%s over %s: %s; 0 failed; deadlocks the server counted (the store runs a victim again): %s",
			ops.total(), e.cfg.Soak, ops, deadlocks)
	})
	agree := timed(Check{Name: "bookkeeping agrees", Guarantee: "after the soak, group counters and finished counts match the tasks (§4.3, §9)"}, func(c *Check) {
		if err := drainRunning(ctx, e, "st-soak"); err != nil {
			c.failed("ending what still ran", err)
			return
		}
		if msg, err := bookkeepingAgrees(ctx, e); err != nil {
			c.failed("comparing", err)
		} else if msg != "" {
			c.Status, c.Evidence = Fail, msg
		} else {
			c.passed("every group counter equals its running tasks; readpast_counts equals the finished tasks per queue and state")
		}
	})
	return []Check{c, agree}
}

// soakOps counts operations by kind.
type soakOps struct {
	claims, finishes, heartbeats, reclaims, enqueues, retries, purges atomic.Int64
}

func (o *soakOps) total() opsTotal {
	return opsTotal(o.claims.Load() + o.finishes.Load() + o.heartbeats.Load() + o.reclaims.Load() + o.enqueues.Load() + o.retries.Load() + o.purges.Load())
}

type opsTotal int64

func (t opsTotal) String() string { return fmt.Sprintf("%d operations", int64(t)) }

func (o *soakOps) String() string {
	return fmt.Sprintf("%d claims, %d finishes, %d heartbeats, %d reclaims, %d enqueues, %d retries, %d purges",
		o.claims.Load(), o.finishes.Load(), o.heartbeats.Load(), o.reclaims.Load(), o.enqueues.Load(), o.retries.Load(), o.purges.Load())
}

// runSoak is the load itself.
func runSoak(ctx context.Context, e *env) (*soakOps, []error) {
	const q = "st-soak"
	ops := &soakOps{}
	sctx, stop := context.WithTimeout(ctx, e.cfg.Soak)
	defer stop()
	var (
		mu   sync.Mutex
		errs []error
		held sync.Map // task id → *queue.Task, for the heartbeats
		wg   sync.WaitGroup
	)
	fail := func(what string, err error) {
		if err == nil || sctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
			return // cut off by the soak's end
		}
		mu.Lock()
		errs = append(errs, fmt.Errorf("%s: %w", what, err))
		mu.Unlock()
	}
	loop := func(every time.Duration, fn func(rng *rand.Rand)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(rand.Uint64(), 3))
			for sctx.Err() == nil {
				fn(rng)
				select {
				case <-sctx.Done():
				case <-time.After(every):
				}
			}
		}()
	}
	lease := 2 * time.Second
	loop(20*time.Millisecond, func(rng *rand.Rand) { // enqueue grouped, chained, keyed
		chain := fmt.Sprintf("st-soak-c%d", rng.IntN(1000))
		var tasks []queue.NewTask
		for i := 0; i < 10; i++ {
			t := queue.NewTask{Queue: q, Body: "SELECT 1", Priority: ptr(rng.IntN(3)), MaxAttempts: 2}
			switch i % 4 {
			case 1:
				t.Group = fmt.Sprintf("st-soak-g%d", rng.IntN(4))
			case 2:
				t.Chain, t.Stage = chain, i
			case 3:
				t.UniqueKey = fmt.Sprintf("k%d", rng.IntN(50))
			}
			tasks = append(tasks, t)
		}
		_, err := e.a.Enqueue(sctx, tasks)
		fail("enqueue", err)
		ops.enqueues.Add(1)
	})
	for w := 0; w < 4; w++ {
		s := []queue.Store{e.a, e.b}[w%2]
		loop(time.Millisecond, func(rng *rand.Rand) { // claim, then finish or abandon
			got, err := s.Claim(sctx, queue.ClaimParams{Queue: q, Owner: fmt.Sprintf("selftest/s%d", w), Limit: 1 + rng.IntN(8), LeaseDuration: lease})
			fail("claim", err)
			ops.claims.Add(1)
			for _, t := range got {
				held.Store(t.ID, t)
			}
			time.Sleep(time.Duration(rng.IntN(10)) * time.Millisecond)
			var ended []*queue.Task
			for _, t := range got {
				if rng.IntN(20) == 0 {
					continue // abandoned: its lease expires and a reclaim ends it
				}
				ended = append(ended, t)
			}
			outcome := queue.OutcomeSucceeded
			if rng.IntN(5) == 0 {
				outcome = queue.OutcomeFailed
			}
			for _, t := range ended {
				held.Delete(t.ID)
			}
			if err := finishAll(context.WithoutCancel(sctx), s, ended, outcome); err != nil && !errors.Is(err, queue.ErrLeaseLost) {
				fail("finish", err)
			}
			ops.finishes.Add(int64(len(ended)))
		})
	}
	loop(300*time.Millisecond, func(*rand.Rand) { // heartbeat what is held
		var leases []queue.Lease
		held.Range(func(_, v any) bool { leases = append(leases, v.(*queue.Task).Lease()); return len(leases) < 200 })
		if len(leases) == 0 {
			return
		}
		_, err := e.b.Heartbeat(sctx, leases, lease)
		fail("heartbeat", err)
		ops.heartbeats.Add(1)
	})
	loop(200*time.Millisecond, func(*rand.Rand) { // reclaim what expired
		_, err := e.a.ReclaimExpired(sctx, 100)
		fail("reclaim", err)
		ops.reclaims.Add(1)
	})
	loop(100*time.Millisecond, func(*rand.Rand) { // retry what failed
		page, err := e.b.List(sctx, queue.ListParams{Queue: q, State: queue.StateFailed, Limit: 5})
		fail("list", err)
		for _, t := range page {
			err := e.b.Retry(sctx, t.ID, "selftest")
			if !errors.Is(err, queue.ErrInvalidState) && !errors.Is(err, queue.ErrNotFound) {
				fail("retry", err)
			}
			ops.retries.Add(1)
		}
	})
	loop(500*time.Millisecond, func(*rand.Rand) { // purge what finished
		_, err := e.a.PurgeTasks(sctx, time.Now().Add(-200*time.Millisecond), 200)
		fail("purge tasks", err)
		_, err = e.a.PurgeAttempts(sctx, time.Now().Add(-200*time.Millisecond), 200)
		fail("purge log", err)
		ops.purges.Add(2)
	})
	wg.Wait()
	return ops, errs
}

// drainRunning waits for every task of q the soak abandoned to have its
// lease expire and be reclaimed.
func drainRunning(ctx context.Context, e *env, q string) error {
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); {
		if _, err := e.a.ReclaimExpired(ctx, 1000); err != nil {
			return err
		}
		page, err := e.a.List(ctx, queue.ListParams{Queue: q, State: queue.StateRunning, Limit: 1})
		if err != nil {
			return err
		}
		if len(page) == 0 {
			return nil
		}
		time.Sleep(250 * time.Millisecond)
	}
	return errors.New("tasks still ran 30 s after the soak")
}

// bookkeepingAgrees compares the counters with the rows they count, on the
// probes' own connection; "" means they agree.
func bookkeepingAgrees(ctx context.Context, e *env) (string, error) {
	var wrong int
	if err := e.sc.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM readpast_groups AS g
		WHERE g.running <> (SELECT COUNT(*) FROM readpast_tasks AS t WHERE t.group_name = g.name AND t.state = 'running')`).Scan(&wrong); err != nil {
		return "", err
	}
	if wrong > 0 {
		return fmt.Sprintf("%d groups count another number of running tasks than run", wrong), nil
	}
	rows, err := e.sc.db.QueryContext(ctx, `SELECT k.queue, k.state, k.n, COALESCE(t.n, 0)
		FROM (SELECT queue, state, SUM(n) AS n FROM readpast_counts GROUP BY queue, state) k -- SQL Server's stripes summed
		LEFT JOIN (SELECT queue, state, COUNT(*) AS n FROM readpast_tasks
		            WHERE state IN ('succeeded', 'failed', 'cancelled') GROUP BY queue, state) t
		  ON t.queue = k.queue AND t.state = k.state
		WHERE k.n <> COALESCE(t.n, 0)`)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var off []string
	for rows.Next() {
		var q, st string
		var kept, real int64
		if err := rows.Scan(&q, &st, &kept, &real); err != nil {
			return "", err
		}
		off = append(off, fmt.Sprintf("%s/%s counted %d, holds %d", q, st, kept, real))
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	if len(off) > 0 {
		return "finished counts drifted: " + strings.Join(off, "; "), nil
	}
	return "", nil
}

// serverDeadlocks reads the server's own count of deadlocks, where the login
// may: PostgreSQL counts them per database, SQL Server server-wide (VIEW
// SERVER STATE).
func serverDeadlocks(ctx context.Context, e *env) (int64, bool) {
	var q string
	switch e.dialect {
	case dialect.Postgres:
		q = "SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()"
	case dialect.SQLServer:
		q = `SELECT cntr_value FROM sys.dm_os_performance_counters
			WHERE counter_name LIKE N'Number of Deadlocks/sec%' AND instance_name = N'_Total'`
	default:
		return 0, false // one writer: SQLite cannot deadlock
	}
	var n sql.NullInt64
	if err := e.sc.db.QueryRowContext(ctx, q).Scan(&n); err != nil || !n.Valid {
		return 0, false
	}
	return n.Int64, true
}
