package queuetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/jobs"
	"readpast/internal/ops"
	"readpast/internal/queue"
	"readpast/internal/testenv"
)

// A job step that fans out (docs/JOBS.md, "A step that fans out"): one task
// per target, resolved when the run starts; the step ends when all of them
// have ended, succeeded only if every one did, and the run follows its plan
// from it exactly once, whichever node records the last end.

// fanOutEditor is the jobs editor of a node that resolves targets among
// the live nodes' (those publishTargets registers: db1..db3 tagged prod).
func fanOutEditor(b bundle) jobs.Editor {
	return jobs.Editor{Store: b.s, Resolve: ops.FanOutResolver(b.s, time.Minute)}
}

// claimAll claims up to n ready tasks of queue q, whatever their target.
func (b bundle) claimAll(t *testing.T, q string, n int) []*queue.Task { return b.claim(t, q, n) }

// stepTargets lists a run's executions of step name by target.
func stepTargets(t *testing.T, b bundle, r *queue.Run, name string) []string {
	t.Helper()
	var out []string
	for _, s := range r.Steps {
		if s.Step == name {
			out = append(out, b.get(t, s.TaskID).Target)
		}
	}
	return out
}

var jobFanOutTests = map[string]func(*testing.T, Harness){
	"a_step_with_three_targets_follows_once_after_all_three": func(t *testing.T, h Harness) {
		b := setup(t, h)
		b.publishTargets(t)
		j := createJob(t, b, `{"name": "fan", "queue": "jf", "steps": [
			{"name": "check", "body": "SELECT 1", "targets": ["tag:prod"], "fanout_limit": 2, "retry_attempts": 1, "retry_interval": "10ms"},
			{"name": "report", "body": "SELECT 2"}]}`)
		require.Equal(t, []string{"tag:prod"}, j.Steps[0].Targets, "the job keeps the selectors")
		_, err := jobEditor(b).Run(b.ctx, "fan", "", "alice")
		require.Error(t, err, "a node that cannot resolve targets starts no run of a job that fans out")
		started, err := fanOutEditor(b).Run(b.ctx, "fan", "", "alice")
		require.NoError(t, err)
		r := getRun(t, b, started.RunID)
		require.ElementsMatch(t, []string{"db1", "db2", "db3"}, stepTargets(t, b, r, "check"), "one task per prod target")
		first := b.claimAll(t, "jf", 10)
		require.Len(t, first, 2, "the fan-out's limit: two servers at once")
		require.True(t, queue.IsFanOutGroup(first[0].Group), "the step's tasks are a fan-out group: %q", first[0].Group)
		// A failed attempt with a retry left is retried, not counted.
		b.finish(t, first[0], queue.OutcomeFailed, "deadlock victim")
		b.finish(t, first[1], queue.OutcomeSucceeded, "")
		require.Equal(t, queue.RunRunning, getRun(t, b, started.RunID).State)
		time.Sleep(50 * time.Millisecond) // the retry's interval
		rest := b.claimAll(t, "jf", 10)
		require.Len(t, rest, 2, "the retried task and the third target")
		for _, task := range rest {
			require.Equal(t, "SELECT 1", task.Body, "no step follows before the fan-out has ended")
		}
		b.finish(t, rest[0], queue.OutcomeSucceeded, "")
		require.Empty(t, b.claimAll(t, "jf", 10), "one task of the step is still running")
		b.finish(t, rest[1], queue.OutcomeSucceeded, "")
		next := b.claimAll(t, "jf", 10)
		require.Len(t, next, 1, "the next step, once")
		require.Equal(t, "SELECT 2", next[0].Body)
		b.finish(t, next[0], queue.OutcomeSucceeded, "")
		r = getRun(t, b, started.RunID)
		require.Equal(t, queue.RunSucceeded, r.State, r.Reason)
		require.Len(t, stepTargets(t, b, r, "report"), 1)
		require.Equal(t, 2, r.StepsRun)
	},
	// A task of the step retried by hand while the others still run is
	// waited for again: the step follows once, after its new end, with the
	// step's outcome from that end. Before, its first end stayed counted, so
	// the others' ends took the count to zero and the step followed (on the
	// failure branch) while the retried task ran.
	"a_task_retried_by_hand_while_its_step_waits_is_waited_for_again": func(t *testing.T, h Harness) {
		b := setup(t, h)
		b.publishTargets(t)
		createJob(t, b, `{"name": "fan", "queue": "jf", "steps": [
			{"name": "check", "body": "SELECT 1", "targets": ["db1", "db2", "db3"], "on_failure": "step:notify"},
			{"name": "report", "body": "SELECT 2", "on_success": "quit_success"},
			{"name": "notify", "body": "SELECT 3", "on_success": "quit_failure"}]}`)
		run, err := fanOutEditor(b).Run(b.ctx, "fan", "", "alice")
		require.NoError(t, err)
		started := run.RunID
		tasks := b.claimAll(t, "jf", 10)
		require.Len(t, tasks, 3)
		b.finish(t, tasks[0], queue.OutcomeFailed, "login failed")
		require.NoError(t, b.s.Retry(b.ctx, tasks[0].ID, "alice"), "the failed target is retried at once")
		b.finish(t, tasks[1], queue.OutcomeSucceeded, "")
		b.finish(t, tasks[2], queue.OutcomeSucceeded, "")
		again := b.claimAll(t, "jf", 10)
		require.Len(t, again, 1, "only the retried task: the step still waits for it")
		require.Equal(t, tasks[0].ID, again[0].ID)
		require.Equal(t, queue.RunRunning, getRun(t, b, started).State)
		b.finish(t, again[0], queue.OutcomeSucceeded, "")
		next := b.claimAll(t, "jf", 10)
		require.Len(t, next, 1, "the step followed once, after the retried task's end")
		require.Equal(t, "SELECT 2", next[0].Body, "every target succeeded in the end: the success branch")
		b.finish(t, next[0], queue.OutcomeSucceeded, "")
		r := getRun(t, b, started)
		require.Equal(t, queue.RunSucceeded, r.State, r.Reason)
		require.Empty(t, stepTargets(t, b, r, "notify"))
	},
	"one_failed_target_takes_the_failure_branch_once": func(t *testing.T, h Harness) {
		b := setup(t, h)
		b.publishTargets(t)
		createJob(t, b, `{"name": "fan", "queue": "jf", "steps": [
			{"name": "check", "body": "SELECT 1", "targets": ["db1", "db2", "db3"], "on_failure": "step:notify"},
			{"name": "report", "body": "SELECT 2", "on_success": "quit_success"},
			{"name": "notify", "body": "SELECT 3", "on_success": "quit_failure"}]}`)
		started, err := fanOutEditor(b).Run(b.ctx, "fan", "", "alice")
		require.NoError(t, err)
		tasks := b.claimAll(t, "jf", 10)
		require.Len(t, tasks, 3)
		b.finish(t, tasks[0], queue.OutcomeSucceeded, "")
		b.finish(t, tasks[1], queue.OutcomeFailed, "login failed")
		b.finish(t, tasks[2], queue.OutcomeSucceeded, "")
		next := b.claimAll(t, "jf", 10)
		require.Len(t, next, 1, "the failure branch, once")
		require.Equal(t, "SELECT 3", next[0].Body)
		b.finish(t, next[0], queue.OutcomeSucceeded, "")
		r := getRun(t, b, started.RunID)
		require.Equal(t, queue.RunFailed, r.State)
		require.Contains(t, r.Reason, "notify")
		require.Empty(t, stepTargets(t, b, r, "report"))
	},
	"the_last_ends_racing_on_several_nodes_follow_once_per_run": func(t *testing.T, h Harness) {
		b := setup(t, h)
		b.publishTargets(t)
		createJob(t, b, `{"name": "fan", "queue": "jf", "overlap": "allow", "steps": [
			{"name": "check", "body": "SELECT 1", "targets": ["tag:prod"]},
			{"name": "report", "body": "SELECT 2"}]}`)
		const runs = 6
		var ids []int64
		for range runs {
			started, err := fanOutEditor(b).Run(b.ctx, "fan", "", "alice")
			require.NoError(t, err)
			ids = append(ids, started.RunID)
		}
		tasks := b.claimAll(t, "jf", 100)
		require.Len(t, tasks, 3*runs)
		stores := []queue.Store{b.s}
		for range 2 {
			stores = append(stores, testenv.OpenStore(t, b.env.DSN, queue.Options{}))
		}
		var wg sync.WaitGroup
		errs := make(chan error, len(tasks))
		for i, task := range tasks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := stores[i%len(stores)].Finish(b.ctx, []queue.Attempt{attempt(task, queue.OutcomeSucceeded, "")})
				if err == nil && res[0].Err != nil {
					err = res[0].Err
				}
				if err != nil {
					errs <- fmt.Errorf("finishing task %d: %w", task.ID, err)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		next := b.claimAll(t, "jf", 100)
		require.Len(t, next, runs, "one next step per run")
		for _, id := range ids {
			r := getRun(t, b, id)
			require.Equal(t, queue.RunRunning, r.State, r.Reason)
			require.Len(t, stepTargets(t, b, r, "report"), 1, "run %d follows its plan once", id)
		}
		for _, task := range next {
			b.finish(t, task, queue.OutcomeSucceeded, "")
		}
		for _, id := range ids {
			require.Equal(t, queue.RunSucceeded, getRun(t, b, id).State)
		}
	},
	"cancelling_a_run_cancels_every_task_of_its_fan_out": func(t *testing.T, h Harness) {
		b := setup(t, h)
		b.publishTargets(t)
		createJob(t, b, `{"name": "fan", "queue": "jf", "steps": [
			{"name": "check", "body": "SELECT 1", "targets": ["tag:prod"]}, {"name": "report", "body": "SELECT 2"}]}`)
		started, err := fanOutEditor(b).Run(b.ctx, "fan", "", "alice")
		require.NoError(t, err)
		running := b.claimAll(t, "jf", 1)
		require.Len(t, running, 1)
		_, err = jobEditor(b).Cancel(b.ctx, started.RunID, "alice")
		require.NoError(t, err)
		r := getRun(t, b, started.RunID)
		require.Equal(t, queue.RunCancelled, r.State)
		for _, s := range r.Steps {
			if s.TaskID != running[0].ID {
				require.Equal(t, queue.StateCancelled, s.State, "task %d", s.TaskID)
			}
		}
		require.Empty(t, b.claimAll(t, "jf", 10))
	},
	"a_fire_of_the_jobs_schedule_resolves_its_steps_targets": func(t *testing.T, h Harness) {
		b := setup(t, h)
		b.publishTargets(t)
		createJob(t, b, `{"name": "fan", "queue": "jf", "schedules": [{"cron": "* * * * * *"}], "steps": [
			{"name": "check", "body": "SELECT 1", "targets": ["tag:prod"], "fanout_limit": 1}]}`)
		sc, err := b.s.GetSchedule(b.ctx, jobs.ScheduleName("fan", 0))
		require.NoError(t, err)
		p := b.fireFanOut(t, sc.NextFireAt)
		require.Len(t, p.Fired, 1)
		require.Equal(t, queue.FireEnqueued, p.Fired[0].Outcome)
		j, err := b.s.GetJob(b.ctx, "fan")
		require.NoError(t, err)
		require.NotNil(t, j.LastRun)
		r := getRun(t, b, j.LastRun.ID)
		require.Equal(t, queue.TriggerSchedule, r.Trigger)
		require.ElementsMatch(t, []string{"db1", "db2", "db3"}, stepTargets(t, b, r, "check"))
		for range 3 {
			got := b.claimAll(t, "jf", 10)
			require.Len(t, got, 1, "a limit of one server at a time")
			b.finish(t, got[0], queue.OutcomeSucceeded, "")
		}
		r = getRun(t, b, j.LastRun.ID)
		require.Equal(t, queue.RunSucceeded, r.State, r.Reason)
	},
}
