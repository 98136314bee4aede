package queuetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
)

// Named targets (docs/TARGETS.md): a task keeps the target it names, a queue
// its default target, and a claim that names the targets a node serves takes
// only their tasks, in claim order, grouped or not.
var targetTests = map[string]func(*testing.T, Harness){
	"a_task_keeps_its_target": func(t *testing.T, h Harness) {
		b := setup(t, h)
		id := b.enqueue(t, queue.NewTask{Body: "a", Queue: "tg", Target: "db1"},
			queue.NewTask{Body: "b", Queue: "tg"},
			queue.NewTask{Body: "c", Queue: "tg", Target: "db2", UniqueKey: "k"})
		require.Equal(t, "db1", b.get(t, id[0]).Target)
		require.Equal(t, "", b.get(t, id[1]).Target, "no target: the queue's default, else the node's")
		require.Equal(t, "db2", b.get(t, id[2]).Target, "a keyed task is written one at a time: it keeps its target too")
		page, err := b.s.List(b.ctx, queue.ListParams{Queue: "tg"})
		require.NoError(t, err)
		require.Len(t, page, 3)
		require.Equal(t, "db2", page[0].Target, "the list reads the target")
	},
	"a_claim_takes_only_the_targets_it_names": func(t *testing.T, h Harness) {
		b := setup(t, h)
		id := b.enqueue(t,
			queue.NewTask{Body: "1", Queue: "tc", Priority: intp(1), Target: "other"},
			queue.NewTask{Body: "2", Queue: "tc", Priority: intp(2), Target: "db1"},
			queue.NewTask{Body: "3", Queue: "tc", Priority: intp(3)},
			queue.NewTask{Body: "4", Queue: "tc", Priority: intp(4), Target: "other", Group: "g"},
			queue.NewTask{Body: "5", Queue: "tc", Priority: intp(5), Target: "db1", Group: "g"})
		claim := func(targets []string, n int) []*queue.Task {
			got, err := b.s.Claim(b.ctx, queue.ClaimParams{Queue: "tc", Owner: "n1/tc", Limit: n, LeaseDuration: time.Minute, Targets: targets})
			require.NoError(t, err)
			return got
		}
		require.Empty(t, claim([]string{}, 10), "a node that serves no target of the queue claims nothing")
		got := claim([]string{"db1", ""}, 10)
		require.Equal(t, []int64{id[1], id[2], id[4]}, ids(got), "db1's tasks and those that name none, grouped or not, in claim order")
		for _, task := range got {
			require.NotEqual(t, "other", task.Target)
		}
		require.Empty(t, claim([]string{"db1", ""}, 10), "what is left is another target's")
		require.Contains(t, b.get(t, id[0]).Why, "", "still pending")
		require.Equal(t, queue.StatePending, b.get(t, id[0]).State)
		got = claim(nil, 10)
		require.Equal(t, []int64{id[0]}, ids(got), "nil claims any target's; g is full (task 5 runs), so task 4 waits")
	},
	"a_backlog_of_another_target_does_not_hide_ready_tasks": func(t *testing.T, h Harness) {
		b := setup(t, h)
		var tasks []queue.NewTask
		for i := 0; i < 500; i++ {
			tasks = append(tasks, queue.NewTask{Body: "x", Queue: "tb", Priority: intp(1), Target: "far"})
		}
		b.enqueue(t, tasks...)
		want := b.enqueue(t, queue.NewTask{Body: "near", Queue: "tb", Priority: intp(9), Target: "near"})
		got, err := b.s.Claim(b.ctx, queue.ClaimParams{Queue: "tb", Owner: "n/tb", Limit: 5, LeaseDuration: time.Minute, Targets: []string{"near"}})
		require.NoError(t, err)
		require.Equal(t, want, ids(got), "the claim reads past the other target's tasks")
	},
	"a_queue_keeps_its_default_target": func(t *testing.T, h Harness) {
		b := setup(t, h)
		d := "db1"
		q, err := b.s.UpdateQueue(b.ctx, "qd", queue.QueueUpdate{DefaultTarget: &d, Actor: "op"})
		require.NoError(t, err)
		require.Equal(t, "db1", q.DefaultTarget)
		w := 3
		q, err = b.s.UpdateQueue(b.ctx, "qd", queue.QueueUpdate{Workers: &w, Actor: "op"})
		require.NoError(t, err)
		require.Equal(t, "db1", q.DefaultTarget, "a change of other settings keeps it")
		settings, err := b.s.QueueSettings(b.ctx)
		require.NoError(t, err)
		require.Len(t, settings, 1)
		require.Equal(t, "db1", settings[0].DefaultTarget, "every node's settings watcher reads it")
		none := ""
		q, err = b.s.UpdateQueue(b.ctx, "qd", queue.QueueUpdate{DefaultTarget: &none, Actor: "op"})
		require.NoError(t, err)
		require.Equal(t, "", q.DefaultTarget, "cleared")
		bad := "no good"
		_, err = b.s.UpdateQueue(b.ctx, "qd", queue.QueueUpdate{DefaultTarget: &bad, Actor: "op"})
		require.ErrorAs(t, err, new(*queue.ValidationError))
	},
	"a_transactional_task_runs_only_on_the_store": func(t *testing.T, h Harness) {
		b := setup(t, h)
		_, err := b.s.Enqueue(b.ctx, []queue.NewTask{{Body: "x", Queue: "tt", Transactional: true, Target: "db1"}})
		var ve *queue.ValidationError
		require.ErrorAs(t, err, &ve)
		require.Equal(t, "target", ve.Field)
		require.Contains(t, ve.Error(), "transactional")
		id := b.enqueue(t, queue.NewTask{Body: "x", Queue: "tt", Transactional: true, Target: queue.TargetStore})
		require.Equal(t, queue.TargetStore, b.get(t, id[0]).Target)
		_, err = b.s.Enqueue(b.ctx, []queue.NewTask{{Body: "x", Queue: "tt", Target: "tag:prod"}})
		require.ErrorAs(t, err, &ve, "a fan-out selector is not a target name")
	},
	"a_schedule_runs_on_its_target": func(t *testing.T, h Harness) {
		b := setup(t, h)
		s, err := b.ed.CreateSchedule(b.ctx, queue.ScheduleDef{Name: "night", Cron: "@daily",
			Task: queue.ScheduleTask{Body: "SELECT 1", Queue: "ts", Target: "db1"}}, "op")
		require.NoError(t, err)
		require.Equal(t, "db1", s.Task.Target)
		run, err := b.s.RunSchedule(b.ctx, "night", "op", nil)
		require.NoError(t, err)
		require.Equal(t, "db1", b.get(t, run.ID).Target, "its run names the schedule's target")
		got, err := b.s.GetSchedule(b.ctx, "night")
		require.NoError(t, err)
		require.Equal(t, "db1", got.Task.Target)
		none := ""
		s, err = b.ed.UpdateSchedule(b.ctx, "night", queue.ScheduleUpdate{Target: &none, Actor: "op"})
		require.NoError(t, err)
		require.Equal(t, "", s.Task.Target, "cleared: the queue's default target")
		list, err := b.s.Schedules(b.ctx)
		require.NoError(t, err)
		require.Len(t, list, 1)
		require.Equal(t, "", list[0].Task.Target)
	},
}
