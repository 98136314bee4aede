package queuetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
)

// manageTests are the groups page's and the queues' management reads and
// changes: pending counts per group, and deleting an empty queue.
var manageTests = map[string]func(*testing.T, Harness){
	// A group's pending count is its tasks waiting to run (ready, delayed or
	// behind a chain stage); running and finished ones are not in it.
	"groups_count_pending": func(t *testing.T, h Harness) {
		b := setup(t, h)
		b.enqueue(t,
			queue.NewTask{Body: "SELECT 1", Group: "g1"},
			queue.NewTask{Body: "SELECT 1", Group: "g1"},
			queue.NewTask{Body: "SELECT 1", Group: "g1", Delay: time.Hour},
			queue.NewTask{Body: "SELECT 1", Group: "g2"},
			queue.NewTask{Body: "SELECT 1"})
		require.NoError(t, b.s.SetGroupLimit(b.ctx, "g1", 1, "operator:ann"))
		running := b.claim(t, queue.DefaultQueue, 10)
		var g2 *queue.Task
		for _, task := range running {
			if task.Group == "g2" {
				g2 = task
			}
		}
		require.NotNil(t, g2, "g2's task runs")
		b.finish(t, g2, queue.OutcomeSucceeded, "")
		groups, err := b.s.Groups(b.ctx)
		require.NoError(t, err)
		byName := map[string]queue.Group{}
		for _, g := range groups {
			byName[g.Name] = g
		}
		require.EqualValues(t, 2, byName["g1"].Pending, "g1: one of three runs (its limit), two wait")
		require.Equal(t, 1, byName["g1"].Running)
		require.Equal(t, "operator:ann", byName["g1"].UpdatedBy)
		require.EqualValues(t, 0, byName["g2"].Pending, "g2's only task finished")
	},
	// A queue that holds no task (a typo's queue, or one whose history
	// retention removed) is deleted and audited, and an enqueue makes it
	// again. A queue with a pending or running task is refused, and so is
	// one with finished tasks still in the history (they keep it listed);
	// an unknown one is not found.
	"delete_empty_queue": func(t *testing.T, h Harness) {
		b := setup(t, h)
		paused := true
		_, err := b.s.UpdateQueue(b.ctx, "typo", queue.QueueUpdate{Paused: &paused, Actor: "operator:ann"})
		require.NoError(t, err)
		ids := b.enqueue(t, queue.NewTask{Queue: "old", Body: "SELECT 1"}, queue.NewTask{Queue: "busy", Body: "SELECT 1", Delay: time.Hour})
		task := b.claim(t, "old", 1)
		require.Len(t, task, 1)
		err = b.s.DeleteQueue(b.ctx, "old", "operator:ann")
		require.True(t, errors.Is(err, queue.ErrInvalidState), "a running task keeps its queue: %v", err)
		require.Contains(t, err.Error(), "queue old still has pending or running tasks")
		b.finish(t, task[0], queue.OutcomeSucceeded, "")
		err = b.s.DeleteQueue(b.ctx, "old", "operator:ann")
		require.True(t, errors.Is(err, queue.ErrInvalidState), "a finished task in the history keeps its queue: %v", err)
		require.Contains(t, err.Error(), "queue old still has finished tasks in its history")
		require.Equal(t, queue.StateSucceeded, b.get(t, ids[0]).State)
		err = b.s.DeleteQueue(b.ctx, "busy", "operator:ann")
		require.True(t, errors.Is(err, queue.ErrInvalidState), "a pending task keeps its queue: %v", err)

		require.NoError(t, b.s.DeleteQueue(b.ctx, "typo", "operator:bob"))
		qs, err := b.s.Queues(b.ctx)
		require.NoError(t, err)
		var names []string
		for _, q := range qs {
			names = append(names, q.Name)
		}
		require.Equal(t, []string{"busy", "old"}, names, "the empty queue is gone")
		audit, err := b.s.Audit(b.ctx, queue.AuditQuery{Limit: 1})
		require.NoError(t, err)
		require.Equal(t, "operator:bob delete_queue queue typo", audit[0].Actor+" "+audit[0].Action+" "+audit[0].Target)
		require.True(t, errors.Is(b.s.DeleteQueue(b.ctx, "typo", "operator:ann"), queue.ErrNotFound), "deleted already")
		require.True(t, errors.Is(b.s.DeleteQueue(b.ctx, "never", "operator:ann"), queue.ErrNotFound))

		b.enqueue(t, queue.NewTask{Queue: "typo", Body: "SELECT 2"})
		settings, err := b.s.QueueSettings(b.ctx)
		require.NoError(t, err)
		names = nil
		for _, q := range settings {
			names = append(names, q.Name)
		}
		require.Contains(t, names, "typo", "an enqueue makes the queue again")
	},
	// Deletes racing enqueues to the same queue never leave a pending task
	// without its queue: each enqueue either keeps the queue or makes it again.
	"delete_racing_enqueues_leaves_no_task_behind": func(t *testing.T, h Harness) {
		b := setup(t, h)
		deleted := 0
		for range 20 {
			var wg sync.WaitGroup
			wg.Add(2)
			go func() {
				defer wg.Done()
				_, _ = b.s.Enqueue(b.ctx, []queue.NewTask{{Queue: "race", Body: "SELECT 1"}})
			}()
			go func() {
				defer wg.Done()
				if b.s.DeleteQueue(b.ctx, "race", "operator:ann") == nil {
					deleted++
				}
			}()
			wg.Wait()
			pending, err := b.s.List(b.ctx, queue.ListParams{Queue: "race", State: queue.StatePending})
			require.NoError(t, err)
			settings, err := b.s.QueueSettings(b.ctx)
			require.NoError(t, err)
			known := false
			for _, q := range settings {
				known = known || q.Name == "race"
			}
			require.True(t, len(pending) == 0 || known, "a pending task of queue race has no queue")
			// Empty the queue again (cancel, then purge the history) for the
			// next round's delete to have a chance.
			for _, p := range pending {
				_, err := b.s.Cancel(b.ctx, p.ID, "test")
				require.NoError(t, err)
			}
			_, err = b.s.PurgeTasks(b.ctx, time.Now().Add(time.Hour), 100)
			require.NoError(t, err)
		}
		t.Logf("%d of 20 deletes won their race", deleted)
	},
}
