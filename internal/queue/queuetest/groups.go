package queuetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/testenv"
)

var groupTests = map[string]func(*testing.T, Harness){
	"limits_hold_under_8_workers": func(t *testing.T, h Harness) {
		b := setup(t, h)
		b.env.SkipOnBabelfish(t, testenv.BabelfishLockHints) // two claimers read one group counter unlocked
		require.NoError(t, b.s.SetGroupLimit(b.ctx, "g5", 3, "test"))
		limit := map[string]int{"g0": 1, "g1": 1, "g2": 1, "g3": 1, "g4": 1, "g5": 3}
		tasks := make([]queue.NewTask, 200)
		for i := range tasks {
			tasks[i] = queue.NewTask{Body: "SELECT 1", Queue: "grp", Group: fmt.Sprintf("g%d", i%6)}
		}
		b.enqueue(t, tasks...)
		var mu sync.Mutex
		running, peak := map[string]int{}, map[string]int{}
		drain(t, b, "grp", 8, 4, len(tasks), func(task *queue.Task) {
			mu.Lock()
			running[task.Group]++
			peak[task.Group] = max(peak[task.Group], running[task.Group])
			mu.Unlock()
			sleepBetween(time.Millisecond, 4*time.Millisecond)
			mu.Lock()
			running[task.Group]--
			mu.Unlock()
		})
		t.Logf("peak running per group: %v", peak)
		for g, p := range peak {
			require.LessOrEqual(t, p, limit[g], "group %s ran %d at once, over its limit %d", g, p, limit[g])
		}
		groups, err := b.s.Groups(b.ctx)
		require.NoError(t, err)
		require.Len(t, groups, 6)
		for _, g := range groups {
			require.Zero(t, g.Running, "group %s counter must return to 0", g.Name)
			require.Equal(t, limit[g.Name], g.MaxRunning)
		}
	},
	"one_batch_claim_respects_limit_1": func(t *testing.T, h Harness) {
		b := setup(t, h)
		for i := 0; i < 10; i++ {
			b.enqueue(t, queue.NewTask{Body: "SELECT 1", Group: "solo"})
		}
		got := b.claim(t, queue.DefaultQueue, 50)
		require.Len(t, got, 1, "a claim of 50 must take one task of a limit-1 group, not all")
		require.Empty(t, b.claim(t, queue.DefaultQueue, 50), "the group is full")
		left, err := b.s.List(b.ctx, queue.ListParams{State: queue.StatePending, Limit: 1})
		require.NoError(t, err)
		require.Contains(t, b.get(t, left[0].ID).Why, "group solo")
		b.finish(t, got[0], queue.OutcomeSucceeded, "")
		require.Len(t, b.claim(t, queue.DefaultQueue, 50), 1)
	},
	"batch_mixes_groups_and_free_tasks": func(t *testing.T, h Harness) {
		b := setup(t, h)
		require.NoError(t, b.s.SetGroupLimit(b.ctx, "three", 3, "test"))
		for i := 0; i < 10; i++ {
			b.enqueue(t, queue.NewTask{Body: "SELECT 1", Group: "one"},
				queue.NewTask{Body: "SELECT 1", Group: "three"},
				queue.NewTask{Body: "SELECT 1"})
		}
		got := b.claim(t, queue.DefaultQueue, 50)
		per := map[string]int{}
		for _, task := range got {
			per[task.Group]++
		}
		require.Equal(t, map[string]int{"one": 1, "three": 3, "": 10}, per)
	},
	"set_group_limit_validates": func(t *testing.T, h Harness) {
		b := setup(t, h)
		require.True(t, queue.IsValidation(b.s.SetGroupLimit(b.ctx, "g", 0, "t")))
		require.True(t, queue.IsValidation(b.s.SetGroupLimit(b.ctx, "", 1, "t")))
	},
}
