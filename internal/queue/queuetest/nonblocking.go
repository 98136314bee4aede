package queuetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/testenv"
)

// The non-blocking proof of SPEC §4.2, from outside the store: Store.Hold runs a
// writer's own statements in a transaction it keeps open, so real row locks
// are held while a second claimer runs the production claim. The claimer must
// return other claimable tasks at once, whatever kind of writer holds locks.

// noWait bounds how long claimer B may take while A's transaction is open; a
// claimer that waits on A's locks would wait until the test releases them.
const noWait = 5 * time.Second

var nonBlockingTests = map[string]func(*testing.T, Harness){
	"claimer_skips_an_open_claim":         func(t *testing.T, h Harness) { heldWriterTest(t, h, queue.HoldClaim, false) },
	"claimer_skips_an_open_finish":        func(t *testing.T, h Harness) { heldWriterTest(t, h, queue.HoldFinish, false) },
	"claimer_skips_an_open_enqueue":       func(t *testing.T, h Harness) { heldWriterTest(t, h, queue.HoldEnqueue, false) },
	"claimer_skips_an_open_cancel":        func(t *testing.T, h Harness) { heldWriterTest(t, h, queue.HoldCancel, false) },
	"claimer_skips_an_open_claim_groups":  func(t *testing.T, h Harness) { heldWriterTest(t, h, queue.HoldClaim, true) },
	"claimer_skips_an_open_finish_groups": func(t *testing.T, h Harness) { heldWriterTest(t, h, queue.HoldFinish, true) },
	"claimer_skips_an_open_enqueue_groups": func(t *testing.T, h Harness) {
		heldWriterTest(t, h, queue.HoldEnqueue, true)
	},
	"claimer_skips_an_open_cancel_groups": func(t *testing.T, h Harness) { heldWriterTest(t, h, queue.HoldCancel, true) },
	"claimer_of_one_skips_an_open_claim": func(t *testing.T, h Harness) {
		b := setup(t, h)
		if !b.s.Capabilities().ConcurrentWriters {
			t.Skip("one writer: a second claimer waits for the first by design (see the other tests of this group)")
		}
		b.env.SkipOnBabelfish(t, testenv.BabelfishLockHints)
		for _, grouped := range []bool{false, true} {
			q := fmt.Sprintf("one-%t", grouped)
			g := func(name string) string {
				if grouped {
					return name
				}
				return ""
			}
			b.enqueue(t, queue.NewTask{Queue: q, Body: "SELECT 1", Group: g(q + "-a")}, queue.NewTask{Queue: q, Body: "SELECT 1", Group: g(q + "-b")})
			a, err := b.s.Hold(b.ctx, queue.HoldOp{Kind: queue.HoldClaim, Claim: queue.ClaimParams{Queue: q, Owner: "A", Limit: 1, LeaseDuration: time.Minute}})
			require.NoError(t, err)
			t.Cleanup(func() { _ = a.Release(context.Background()) }) // a failed assertion must not leave it open
			ctx, cancel := context.WithTimeout(b.ctx, noWait)
			got, err := b.s.Claim(ctx, queue.ClaimParams{Queue: q, Owner: "B", Limit: 1, LeaseDuration: time.Minute})
			cancel()
			require.NoError(t, err)
			require.Len(t, got, 1, "grouped=%t: a claim of one takes the task after the one A holds", grouped)
			require.NotEqual(t, a.Claimed()[0].ID, got[0].ID)
			require.NoError(t, a.Release(b.ctx))
		}
	},
	"hold_validates": func(t *testing.T, h Harness) {
		b := setup(t, h)
		for _, op := range []queue.HoldOp{
			{Kind: "drop"},
			{Kind: queue.HoldClaim, Claim: queue.ClaimParams{Queue: "q", Limit: 0, LeaseDuration: time.Minute}},
			{Kind: queue.HoldFinish},
			{Kind: queue.HoldEnqueue},
			{Kind: queue.HoldCancel},
		} {
			_, err := b.s.Hold(b.ctx, op)
			require.True(t, queue.IsValidation(err), "hold %+v must be refused, got %v", op, err)
		}
	},
}

// groupsPending is how many concurrency groups (limit 1 each) have pending
// tasks in the grouped variant: the seed 002 situation, many groups ahead of
// the free tasks in claim order.
const groupsPending = 64

// heldWriterTest holds one writer of the given kind open, then claims.
func heldWriterTest(t *testing.T, h Harness, kind queue.HoldKind, grouped bool) {
	b := setup(t, h)
	if kind == queue.HoldClaim || kind == queue.HoldCancel {
		// Their rows are tasks B would take: skipped on SQL Server, waited for
		// where READPAST is ignored. (A held finish or enqueue holds no row B
		// reads, so those run on Babelfish too.)
		b.env.SkipOnBabelfish(t, testenv.BabelfishLockHints)
	}
	const q = "nb"
	var tasks []queue.NewTask
	if grouped {
		// Two tasks per group, all more urgent than the ten free tasks.
		for g := 0; g < groupsPending; g++ {
			for i := 0; i < 2; i++ {
				tasks = append(tasks, queue.NewTask{Queue: q, Body: "SELECT 1", Priority: intp(1), Group: fmt.Sprintf("g%02d", g)})
			}
		}
	}
	// The free tasks carry unique keys: their partial unique index must not
	// make claimers wait either (the seed's filtered-unique-index trap).
	for i := 0; i < 10; i++ {
		tasks = append(tasks, queue.NewTask{Queue: q, Body: "SELECT 1", Priority: intp(5), UniqueKey: fmt.Sprintf("k%d", i)})
	}
	ids := b.enqueue(t, tasks...)

	op := queue.HoldOp{Kind: kind}
	held := map[int64]bool{} // tasks A's transaction has locked
	switch kind {
	case queue.HoldClaim:
		op.Claim = queue.ClaimParams{Queue: q, Owner: "A", Limit: 1, LeaseDuration: time.Minute}
	case queue.HoldFinish:
		// A finishes a task claimed (and committed) before: its task row and,
		// grouped, its group row are locked.
		got := b.claim(t, q, 1)
		require.Len(t, got, 1)
		held[got[0].ID] = true
		op.Attempts = []queue.Attempt{attempt(got[0], queue.OutcomeSucceeded, "")}
	case queue.HoldEnqueue:
		op.Tasks = []queue.NewTask{{Queue: q, Body: "SELECT 2", Priority: intp(0)}, {Queue: "nb-new", Body: "SELECT 2"}}
		if grouped {
			op.Tasks = append(op.Tasks, queue.NewTask{Queue: q, Body: "SELECT 2", Priority: intp(0), Group: "g00"},
				queue.NewTask{Queue: q, Body: "SELECT 2", Priority: intp(0), Group: "g-new"})
		}
	case queue.HoldCancel:
		op.TaskID, op.Actor = ids[0], "A"
		held[ids[0]] = true
	}
	a, err := b.s.Hold(b.ctx, op)
	require.NoError(t, err, "holding a %s open", kind)
	t.Cleanup(func() { _ = a.Release(context.Background()) })
	for _, task := range a.Claimed() {
		held[task.ID] = true
	}
	if kind == queue.HoldClaim {
		require.Len(t, a.Claimed(), 1, "the held claim takes one task")
	}

	if !b.s.Capabilities().ConcurrentWriters {
		oneWriterDoesNotBlockReaders(t, b, a, q)
		return
	}

	ctx, cancel := context.WithTimeout(b.ctx, noWait)
	defer cancel()
	start := time.Now()
	got, err := b.s.Claim(ctx, queue.ClaimParams{Queue: q, Owner: "B", Limit: 100, LeaseDuration: time.Minute})
	elapsed := time.Since(start)
	require.NoError(t, err, "claimer B must not wait for A's open %s (waited %s)", kind, elapsed)
	t.Logf("claimer B got %d tasks in %s while A's %s was open", len(got), elapsed, kind)

	perGroup := map[string]int{}
	for _, task := range got {
		require.False(t, held[task.ID], "B got task %d, which A's open %s holds", task.ID, kind)
		require.NotEqual(t, "SELECT 2", task.Body, "B got a task of A's uncommitted enqueue")
		perGroup[task.Group]++
	}
	defer heldWasRolledBack(t, b, a, kind, held, q, grouped)
	if !grouped {
		require.Len(t, got, 10-len(held), "B must get every other claimable task")
		return
	}
	// Grouped: B gets every free task and one task of each group it can admit:
	// all of them but g00, whose row an open claim or finish of A holds.
	want := groupsPending
	if kind == queue.HoldClaim || kind == queue.HoldFinish {
		want--
		require.Zero(t, perGroup["g00"], "A holds group g00's row")
	}
	require.Equal(t, 10, perGroup[""], "B must get the free tasks behind the groups")
	delete(perGroup, "")
	require.Len(t, perGroup, want, "B must admit every other group")
	for g, n := range perGroup {
		require.Equal(t, 1, n, "group %s admits one task at a time", g)
	}
}

// heldWasRolledBack releases A and checks that its transaction was really
// open: nothing it did is kept.
func heldWasRolledBack(t *testing.T, b bundle, a queue.Held, kind queue.HoldKind, held map[int64]bool, q string, grouped bool) {
	if t.Failed() {
		return
	}
	require.NoError(t, a.Release(b.ctx))
	for id := range held {
		task := b.get(t, id)
		want := queue.StatePending
		if kind == queue.HoldFinish {
			want = queue.StateRunning // claimed before the hold; the held finish is undone
		}
		require.Equal(t, want, task.State, "task %d after A's %s was rolled back", id, kind)
	}
	pending, err := b.s.List(b.ctx, queue.ListParams{Queue: q, State: queue.StatePending, Limit: 1000})
	require.NoError(t, err)
	for _, task := range pending {
		require.NotEqual(t, "SELECT 2", task.Body, "A's enqueue was rolled back")
	}
	if !grouped && (kind == queue.HoldClaim || kind == queue.HoldCancel) {
		require.Equal(t, len(held), len(pending), "the held tasks are the only ones left pending")
	}
}

// oneWriterDoesNotBlockReaders is the proof for a store with one writer
// (SQLite): while a write transaction is held open, dashboard reads complete at
// once, and a second claimer waits only until that transaction ends.
func oneWriterDoesNotBlockReaders(t *testing.T, b bundle, a queue.Held, q string) {
	ctx, cancel := context.WithTimeout(b.ctx, noWait)
	defer cancel()
	_, err := b.s.List(ctx, queue.ListParams{Queue: q, State: queue.StatePending})
	require.NoError(t, err, "a read must not wait for an open write")
	_, err = b.s.Queues(ctx)
	require.NoError(t, err, "a read must not wait for an open write")
	_, err = b.s.Attempts(ctx, queue.LogQuery{Queue: q})
	require.NoError(t, err, "a read must not wait for an open write")

	done := make(chan []*queue.Task, 1)
	go func() {
		got, err := b.s.Claim(b.ctx, queue.ClaimParams{Queue: q, Owner: "B", Limit: 5, LeaseDuration: time.Minute})
		if err != nil {
			t.Errorf("claimer B: %v", err)
		}
		done <- got
	}()
	select {
	case <-done:
		t.Fatal("with one writer, claimer B cannot commit while A's write is open")
	case <-time.After(200 * time.Millisecond):
	}
	require.NoError(t, a.Release(b.ctx))
	select {
	case got := <-done:
		require.NotEmpty(t, got, "B claims once A's transaction ended")
	case <-time.After(noWait):
		t.Fatal("claimer B still waits after A's transaction ended")
	}
}
