package selftest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"readpast/internal/dialect"
	"readpast/internal/queue"
)

// waitLimit is how long claimer B may take while A's transaction is open
// before the probe calls it waiting: a claim of a hundred tasks takes
// milliseconds, a claim that waits for A's locks waits until A ends.
const waitLimit = 2 * time.Second

// groupsAhead is how many busy groups sit ahead of the free tasks, as in
// seed 002: a claim that locked every candidate's group would hide them all.
const groupsAhead = 64

// probeNonBlocking is SPEC §4.2 from outside the store: store A runs a
// writer's production statements in a transaction it keeps open (Hold), so
// its row locks stay held, and meanwhile store B, on connections of its own,
// claims from the same queue. B must return the other tasks at once, with and
// without groups ahead of them.
func probeNonBlocking(ctx context.Context, e *env) []Check {
	var out []Check
	for _, grouped := range []bool{false, true} {
		for _, kind := range []queue.HoldKind{queue.HoldClaim, queue.HoldFinish, queue.HoldEnqueue, queue.HoldCancel} {
			out = append(out, nonBlocking(ctx, e, kind, grouped))
		}
	}
	return out
}

func nonBlocking(ctx context.Context, e *env, kind queue.HoldKind, grouped bool) Check {
	name := "claimers never wait: open " + string(kind)
	if grouped {
		name += ", 64 groups ahead"
	}
	return timed(Check{Name: name, Guarantee: "claimer B skips what A's open transaction holds (§4.2)"}, func(c *Check) {
		if !e.a.Capabilities().ConcurrentWriters {
			c.Status, c.Evidence = Skip, "SQLite has one writer: a claimer waits for an open write transaction by design, for the length of one short transaction (docs/QUEUE.md)"
			return
		}
		q := fmt.Sprintf("st-nb-%s-%t", kind, grouped)
		if err := seedNonBlocking(ctx, e.a, q, grouped); err != nil {
			c.failed("enqueueing", err)
			return
		}
		op, busy, err := holdOp(ctx, e.a, kind, q)
		if err != nil {
			c.failed("preparing A's "+string(kind), err)
			return
		}
		held, err := e.a.Hold(ctx, op)
		if err != nil {
			c.failed("holding A's "+string(kind)+" open", err)
			return
		}
		type result struct {
			got  []*queue.Task
			err  error
			took time.Duration
		}
		done := make(chan result, 1)
		start := time.Now()
		go func() {
			got, err := e.b.Claim(ctx, queue.ClaimParams{Queue: q, Owner: "selftest/B", Limit: 100, LeaseDuration: time.Minute})
			done <- result{got, err, time.Since(start)}
		}()
		var r result
		select {
		case r = <-done:
		case <-time.After(waitLimit):
			// B waits for A: end A so that B can finish, then report.
			_ = held.Release(context.WithoutCancel(ctx))
			r = <-done
			_ = finishAll(context.WithoutCancel(ctx), e.b, r.got, queue.OutcomeCancelled)
			c.Status, c.Evidence = Fail, fmt.Sprintf("claimer B waited %s for A's open %s and went on only when A ended (the server did not let it read past A's locks)", r.took.Round(time.Millisecond), kind)
			return
		}
		relErr := held.Release(context.WithoutCancel(ctx))
		if r.err != nil {
			c.failed("claimer B", r.err)
			return
		}
		if relErr != nil {
			c.failed("releasing A", relErr)
			return
		}
		// Free to take: every free task and one task of each group (limit
		// 1), but for the task A's writer holds or runs, and its group.
		wantFree, wantGrouped := 10, 0
		if grouped {
			wantGrouped = groupsAhead
		}
		if kind == queue.HoldClaim && len(held.Claimed()) > 0 {
			busy = held.Claimed()[0]
		}
		switch {
		case busy == nil:
		case busy.Group == "":
			wantFree--
		default:
			wantGrouped--
		}
		free, inGroups := 0, 0
		for _, t := range r.got {
			if t.Group == "" {
				free++
			} else {
				inGroups++
			}
		}
		_ = finishAll(ctx, e.b, r.got, queue.OutcomeCancelled)
		if free < wantFree || inGroups < wantGrouped {
			c.Status, c.Evidence = Fail, fmt.Sprintf("claimer B got %d free and %d grouped tasks while A's %s was open; %d and %d were free to take", free, inGroups, kind, wantFree, wantGrouped)
			return
		}
		c.passed("B took %d free and %d grouped tasks in %s while A's %s held its rows", free, inGroups, ms(r.took), kind)
	})
}

// seedNonBlocking enqueues ten free tasks and, grouped, two tasks in each of
// 64 groups, more urgent than the free ones.
func seedNonBlocking(ctx context.Context, s queue.Store, q string, grouped bool) error {
	var tasks []queue.NewTask
	if grouped {
		for g := 0; g < groupsAhead; g++ {
			for i := 0; i < 2; i++ {
				tasks = append(tasks, queue.NewTask{Queue: q, Body: "SELECT 1", Priority: ptr(1), Group: fmt.Sprintf("%s-g%02d", q, g)})
			}
		}
	}
	for i := 0; i < 10; i++ {
		tasks = append(tasks, queue.NewTask{Queue: q, Body: "SELECT 1", Priority: ptr(5)})
	}
	_, err := s.Enqueue(ctx, tasks)
	return err
}

// holdOp is the writer A holds open on queue q: a claim of one task, the
// finish of a task it claimed, an enqueue into the queue's groups, or the
// cancel of a pending task. busy is the task A's writer runs or holds before
// the hold (finish, cancel); a held claim says what it took itself.
func holdOp(ctx context.Context, s queue.Store, kind queue.HoldKind, q string) (op queue.HoldOp, busy *queue.Task, err error) {
	switch kind {
	case queue.HoldClaim:
		return queue.HoldOp{Kind: kind, Claim: queue.ClaimParams{Queue: q, Owner: "selftest/A", Limit: 1, LeaseDuration: time.Minute}}, nil, nil
	case queue.HoldFinish:
		got, err := s.Claim(ctx, queue.ClaimParams{Queue: q, Owner: "selftest/A", Limit: 1, LeaseDuration: time.Minute})
		if err != nil || len(got) == 0 {
			return op, nil, fmt.Errorf("claiming the task to finish: %d tasks (%v)", len(got), err)
		}
		now := time.Now()
		return queue.HoldOp{Kind: kind, Attempts: []queue.Attempt{{Lease: got[0].Lease(), Outcome: queue.OutcomeSucceeded, StartedAt: now, FinishedAt: now}}}, got[0], nil
	case queue.HoldEnqueue:
		return queue.HoldOp{Kind: kind, Tasks: []queue.NewTask{
			{Queue: q, Body: "SELECT 1", Group: q + "-new", Chain: q + "-chain"},
			{Queue: q, Body: "SELECT 1", Group: q + "-g00", UniqueKey: q + "-key"},
		}}, nil, nil
	default:
		page, err := s.List(ctx, queue.ListParams{Queue: q, State: queue.StatePending, Limit: 1})
		if err != nil || len(page) == 0 {
			return op, nil, fmt.Errorf("finding a task to cancel: %v", err)
		}
		return queue.HoldOp{Kind: kind, TaskID: page[0].ID, Actor: "selftest"}, page[0], nil
	}
}

// probeLockFootprint holds a claim of two tasks open, with 64 groups ahead,
// and counts from a connection of its own how many task and group rows are
// locked: the claimed tasks, and at most the groups they belong to.
func probeLockFootprint(ctx context.Context, e *env) []Check {
	return []Check{timed(Check{Name: "lock footprint", Guarantee: "an open claim locks the tasks it takes and the groups it admits from, nothing more (§4.2)"}, func(c *Check) {
		counter, ok := lockCounters[e.dialect]
		if !ok {
			c.Status, c.Evidence = Skip, "SQLite locks the whole database for a writer: there are no row locks to count"
			return
		}
		const q = "st-locks"
		if err := seedNonBlocking(ctx, e.a, q, true); err != nil {
			c.failed("enqueueing", err)
			return
		}
		held, err := e.a.Hold(ctx, queue.HoldOp{Kind: queue.HoldClaim, Claim: queue.ClaimParams{Queue: q, Owner: "selftest/A", Limit: 2, LeaseDuration: time.Minute}})
		if err != nil {
			c.failed("holding a claim open", err)
			return
		}
		defer held.Release(context.WithoutCancel(ctx)) //nolint:errcheck // a probe's cleanup
		claimed := held.Claimed()
		groups := map[string]bool{}
		for _, t := range claimed {
			if t.Group != "" {
				groups[t.Group] = true
			}
		}
		tasks, err := lockedRows(ctx, e.sc.db, counter, "readpast_tasks")
		if err != nil {
			c.failed("counting locked task rows", err)
			return
		}
		lockedGroups, err := lockedRows(ctx, e.sc.db, counter, "readpast_groups")
		if err != nil {
			c.failed("counting locked group rows", err)
			return
		}
		if tasks != len(claimed) || lockedGroups > len(groups) {
			c.Status, c.Evidence = Fail, fmt.Sprintf("an open claim of %d tasks (%d groups) holds %d task rows and %d of %d group rows", len(claimed), len(groups), tasks, lockedGroups, groupsAhead)
			return
		}
		c.passed("an open claim of %d tasks holds %d task rows and %d of %d group rows", len(claimed), tasks, lockedGroups, groupsAhead)
	})}
}

// lockCounter counts a table's rows two ways on one connection, inside a
// transaction it rolls back: all of them, and those a locking read that skips
// locked rows can lock. The difference is what another transaction holds.
type lockCounter struct {
	setup, all, unlocked string // %s: the table
}

var lockCounters = map[dialect.Dialect]lockCounter{
	dialect.Postgres: {
		setup:    "SET LOCAL lock_timeout = '3s'",
		all:      "SELECT count(*) FROM %s",
		unlocked: "SELECT count(*) FROM (SELECT 1 FROM %s FOR UPDATE SKIP LOCKED) AS s",
	},
	dialect.SQLServer: {
		// A lock timeout: where READPAST is ignored the read fails fast
		// instead of waiting for the claim. INDEX(1): the clustered index,
		// whose keys every writer locks.
		setup:    "SET LOCK_TIMEOUT 3000;",
		all:      "SELECT COUNT(*) FROM dbo.%s WITH (NOLOCK);",
		unlocked: "SELECT COUNT(*) FROM dbo.%s WITH (UPDLOCK, READPAST, ROWLOCK, INDEX(1));",
	},
}

func lockedRows(ctx context.Context, db *sql.DB, lc lockCounter, table string) (int, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback() //nolint:errcheck // only reads, and the probe's own locks
	if _, err := tx.ExecContext(ctx, lc.setup); err != nil {
		return 0, err
	}
	var all, unlocked int
	if err := tx.QueryRowContext(ctx, fmt.Sprintf(lc.all, table)).Scan(&all); err != nil {
		return 0, err
	}
	if err := tx.QueryRowContext(ctx, fmt.Sprintf(lc.unlocked, table)).Scan(&unlocked); err != nil {
		return 0, errors.Join(errors.New("the read that skips locked rows failed (does the server honour READPAST / SKIP LOCKED?)"), err)
	}
	return all - unlocked, nil
}
