package queuetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
)

// The claim reads ungrouped ready tasks, the groups with free slots, and due
// delayed tasks as separate streams (docs/QUEUE.md, "Claiming behind a
// backlog"); these tests check that the streams merge in claim order and that
// tasks which cannot run now never hide those that can.
var backlogTests = map[string]func(*testing.T, Harness){
	"claim_order_holds_across_groups_and_delays": func(t *testing.T, h Harness) {
		b := setup(t, h)
		soon := time.Now().Add(b.env.Slower(t, 3*time.Second)) // well after the enqueue and the first claims
		id := b.enqueue(t,
			queue.NewTask{Body: "a", Queue: "o", Priority: intp(5)},
			queue.NewTask{Body: "b", Queue: "o", Priority: intp(3), Group: "g1"},
			queue.NewTask{Body: "c", Queue: "o", Priority: intp(4), Group: "g1"},
			queue.NewTask{Body: "d", Queue: "o", Priority: intp(1), AvailableAt: soon},
			queue.NewTask{Body: "e", Queue: "o", Priority: intp(6), Group: "g2"},
			queue.NewTask{Body: "f", Queue: "o", Priority: intp(5), Group: "g2"})
		one := func() int64 {
			t.Helper()
			got := b.claim(t, "o", 1)
			require.Len(t, got, 1)
			return got[0].ID
		}
		first := one()
		require.Equal(t, id[1], first, "b: the most urgent task that can run (d is delayed)")
		require.Equal(t, []int64{id[0], id[5]}, ids(b.claim(t, "o", 2)), "a, then f (a's id is lower at priority 5); c waits for g1")
		require.Empty(t, b.claim(t, "o", 5), "c waits for g1, e for g2, d for its time")
		require.Contains(t, b.get(t, id[3]).Why, "delayed until")
		time.Sleep(time.Until(soon) + 50*time.Millisecond)
		require.Equal(t, []int64{id[3]}, ids(b.claim(t, "o", 5)), "d once it is due, before anything of priority above 1")
		b.finish(t, b.get(t, first), queue.OutcomeSucceeded, "")
		require.Equal(t, []int64{id[2]}, ids(b.claim(t, "o", 5)), "c once g1 has a free slot")
	},
	"tasks_that_cannot_run_do_not_hide_those_that_can": func(t *testing.T, h Harness) {
		b := setup(t, h)
		// Ahead in claim order: a full mutex group's backlog and delayed tasks
		// of a more urgent priority; behind them, the tasks that can run.
		var tasks []queue.NewTask
		for i := 0; i < 3000; i++ {
			tasks = append(tasks, queue.NewTask{Body: "blocked", Queue: "bl", Priority: intp(1), Group: "busy"},
				queue.NewTask{Body: "later", Queue: "bl", Priority: intp(0), Delay: time.Hour})
		}
		b.enqueue(t, tasks...)
		held := b.claim(t, "bl", 1) // fills group busy
		require.Len(t, held, 1)
		require.Equal(t, "busy", held[0].Group)
		ready := b.enqueue(t, queue.NewTask{Body: "free", Queue: "bl", Priority: intp(9)},
			queue.NewTask{Body: "grouped", Queue: "bl", Priority: intp(9), Group: "idle"})
		got := b.claim(t, "bl", 10)
		require.ElementsMatch(t, ready, ids(got), "the claim finds the runnable tasks behind 6,000 that cannot run")
		for i := 0; i < 5; i++ {
			require.Empty(t, b.claim(t, "bl", 10), "nothing else can run")
		}
	},
	"many_groups_each_admit_their_slots": func(t *testing.T, h Harness) {
		b := setup(t, h)
		var tasks []queue.NewTask
		for g := 0; g < 40; g++ {
			for i := 0; i < 5; i++ {
				tasks = append(tasks, queue.NewTask{Body: "SELECT 1", Queue: "mg", Group: fmt.Sprintf("m%02d", g)})
			}
		}
		b.enqueue(t, tasks...)
		require.NoError(t, b.s.SetGroupLimit(b.ctx, "m07", 3, "t"))
		got := b.claim(t, "mg", 1000)
		per := map[string]int{}
		for _, task := range got {
			per[task.Group]++
		}
		require.Len(t, per, 40, "every group admits")
		for g, n := range per {
			want := 1
			if g == "m07" {
				want = 3
			}
			require.Equal(t, want, n, "group %s", g)
		}
	},
}
