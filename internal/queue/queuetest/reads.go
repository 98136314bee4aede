package queuetest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
)

var readTests = map[string]func(*testing.T, Harness){
	"list_filters_and_keyset_pages": func(t *testing.T, h Harness) {
		b := setup(t, h)
		var tasks []queue.NewTask
		for i := 0; i < 90; i++ {
			tasks = append(tasks, queue.NewTask{Body: "SELECT 1", Queue: fmt.Sprintf("q%d", i%3),
				Group: fmt.Sprintf("g%d", i%2), Chain: fmt.Sprintf("c%d", i%5), Stage: i % 4})
		}
		b.enqueue(t, tasks...)
		b.claim(t, "q0", 1) // one running task in q0 (stage 0 of some chain)

		var all []int64
		for before := int64(0); ; {
			page, err := b.s.List(b.ctx, queue.ListParams{Before: before, Limit: 7})
			require.NoError(t, err)
			if len(page) == 0 {
				break
			}
			require.LessOrEqual(t, len(page), 7)
			for _, task := range page {
				all = append(all, task.ID)
			}
			before = page[len(page)-1].ID
		}
		require.Len(t, all, 90, "paging must visit every task once")
		for i := 1; i < len(all); i++ {
			require.Greater(t, all[i-1], all[i], "newest first")
		}

		count := func(p queue.ListParams) int {
			p.Limit = 1000
			got, err := b.s.List(b.ctx, p)
			require.NoError(t, err)
			for _, task := range got {
				require.True(t, p.State == "" || task.State == p.State)
				require.True(t, p.Queue == "" || task.Queue == p.Queue)
				require.True(t, p.Group == "" || task.Group == p.Group)
				require.True(t, p.Chain == "" || task.Chain == p.Chain)
			}
			return len(got)
		}
		require.Equal(t, 30, count(queue.ListParams{Queue: "q1"}))
		require.Equal(t, 45, count(queue.ListParams{Group: "g1"}))
		require.Equal(t, 18, count(queue.ListParams{Chain: "c2"}))
		require.Equal(t, 1, count(queue.ListParams{State: queue.StateRunning}))
		require.Equal(t, 1, count(queue.ListParams{State: queue.StateRunning, Queue: "q0"}))
		require.Equal(t, 29, count(queue.ListParams{State: queue.StatePending, Queue: "q0"}))
		require.Equal(t, 15, count(queue.ListParams{Queue: "q2", Group: "g0"}))

		// Tasks of every state in groups and in a schedule: each filter's
		// keyset pages are exactly its tasks, newest first, whether the store
		// reads one index range or merges one per state (migrations/*/000001_baseline).
		for _, g := range []string{"g0", "g1"} {
			require.NoError(t, b.s.SetGroupLimit(b.ctx, g, 100, "t"))
		}
		for range 3 {
			done := b.claim(t, "q1", 1)
			require.Len(t, done, 1)
			b.finish(t, done[0], queue.OutcomeSucceeded, "")
		}
		b.createSchedule(t, queue.ScheduleDef{Name: "sx", Cron: "0 1 * * *", Paused: true, Overlap: queue.OverlapAllow,
			Task: queue.ScheduleTask{Queue: "qs", Body: "SELECT 1", Group: "g1"}})
		for range 9 {
			_, err := b.ed.RunSchedule(b.ctx, "sx", "t")
			require.NoError(t, err)
		}
		for _, task := range b.claim(t, "qs", 1) {
			b.finish(t, task, queue.OutcomeSucceeded, "")
		}
		b.claim(t, "qs", 1)
		for _, p := range []queue.ListParams{{Queue: "q2", State: queue.StatePending}, {Schedule: "sx", State: queue.StatePending}} {
			first, err := b.s.List(b.ctx, queue.ListParams{Queue: p.Queue, Schedule: p.Schedule, State: p.State, Limit: 1})
			require.NoError(t, err)
			require.Len(t, first, 1)
			_, err = b.s.Cancel(b.ctx, first[0].ID, "t")
			require.NoError(t, err)
		}
		everything := pagesOf(t, b, queue.ListParams{})
		for _, p := range []queue.ListParams{
			{Group: "g0"}, {Group: "g1"}, {Group: "g1", State: queue.StateSucceeded}, {Group: "g0", State: queue.StatePending},
			{Group: "g0", State: queue.StateCancelled}, {Group: "g1", State: queue.StateRunning}, {Group: "g0", Queue: "q1"},
			{Schedule: "sx"}, {Schedule: "sx", State: queue.StatePending}, {Schedule: "sx", State: queue.StateSucceeded},
			{Schedule: "sx", State: queue.StateCancelled}, {Schedule: "sx", Queue: "qs"}, {Schedule: "sx", Group: "g1"},
			{Group: "g1", Chain: "c1"}, {Queue: "q1"}, {State: queue.StateSucceeded},
			{Group: "g1", State: queue.StateFailed}, {Schedule: "sx", State: queue.StateFailed}, // none
		} {
			want := []int64{}
			for _, task := range everything {
				if (p.Group == "" || task.Group == p.Group) && (p.Schedule == "" || task.Schedule == p.Schedule) &&
					(p.State == "" || task.State == p.State) && (p.Queue == "" || task.Queue == p.Queue) &&
					(p.Chain == "" || task.Chain == p.Chain) {
					want = append(want, task.ID)
				}
			}
			require.Equal(t, want, ids(pagesOf(t, b, p)), "the pages of %+v", p)
		}

		_, err := b.s.List(b.ctx, queue.ListParams{State: "bogus"})
		require.True(t, queue.IsValidation(err), "an unknown state is a validation error, got %v", err)
		_, err = b.s.Get(b.ctx, 123456789)
		require.ErrorIs(t, err, queue.ErrNotFound)
	},
	"queues_count_per_state": func(t *testing.T, h Harness) {
		b := setup(t, h)
		for i := 0; i < 5; i++ {
			b.enqueue(t, queue.NewTask{Body: "SELECT 1", Queue: "counted"})
		}
		got := b.claim(t, "counted", 3)
		b.finish(t, got[0], queue.OutcomeSucceeded, "")
		b.enqueue(t, queue.NewTask{Body: "SELECT 1", Queue: "other"})
		_, err := b.s.UpdateQueue(b.ctx, "idle", queue.QueueUpdate{Workers: intp(2), Actor: "t"})
		require.NoError(t, err)
		c := queueCounts(t, b, "counted")
		require.Equal(t, int64(2), c[queue.StatePending])
		require.Equal(t, int64(2), c[queue.StateRunning])
		require.Equal(t, int64(1), c[queue.StateSucceeded])
		require.Equal(t, int64(1), queueCounts(t, b, "other")[queue.StatePending])
		require.Zero(t, queueCounts(t, b, "idle")[queue.StatePending], "a queue with settings but no tasks is listed")
	},
	"why_a_task_waits": func(t *testing.T, h Harness) {
		b := setup(t, h)
		id := b.enqueue(t, queue.NewTask{Body: "SELECT 1", Group: "mutex"}, queue.NewTask{Body: "SELECT 1", Group: "mutex"})
		b.claim(t, queue.DefaultQueue, 1)
		require.Contains(t, b.get(t, id[1]).Why, "group mutex is full (1 of 1 running)")
		require.Empty(t, b.get(t, id[0]).Why, "a running task does not wait")

		idle := b.enqueue(t, queue.NewTask{Body: "SELECT 1", Queue: "idle"})[0]
		require.Empty(t, b.get(t, idle).Why, "nothing holds it back")
		_, err := b.s.UpdateQueue(b.ctx, "idle", queue.QueueUpdate{Workers: intp(0), Actor: "op"})
		require.NoError(t, err)
		require.Contains(t, b.get(t, idle).Why, "queue idle is set to 0 workers", "a queue nobody works says so")
	},
}

// pagesOf lists every task that matches p, newest first, in keyset pages of 7.
func pagesOf(t *testing.T, b bundle, p queue.ListParams) []*queue.Task {
	t.Helper()
	var out []*queue.Task
	for p.Limit = 7; ; {
		page, err := b.s.List(b.ctx, p)
		require.NoError(t, err, "listing %+v", p)
		if len(page) == 0 {
			return out
		}
		require.LessOrEqual(t, len(page), 7)
		out = append(out, page...)
		p.Before = page[len(page)-1].ID
	}
}
