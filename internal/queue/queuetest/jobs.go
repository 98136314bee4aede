package queuetest

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"readpast/internal/jobs"
	"readpast/internal/queue"
	"readpast/internal/schedule"
)

// Jobs (docs/JOBS.md): a run follows its job's flow exactly once, one step
// task at a time, each next step decided and enqueued in the transaction
// that records the end of the step before it.

// jobEditor is the jobs package over the store, as operators reach it.
func jobEditor(b bundle) jobs.Editor { return jobs.Editor{Store: b.s} }

// createJob stores a job from the API's JSON and fails the test on error.
func createJob(t *testing.T, b bundle, doc string) *queue.Job {
	t.Helper()
	j, _, err := jobEditor(b).CreateFromJSON(b.ctx, []byte(doc), true, "alice")
	require.NoError(t, err, "creating job %s", doc)
	return j
}

// runStep claims the one ready task of queue q and ends it: failed when its
// body says 'fail', succeeded otherwise. It returns the task.
func runStep(t *testing.T, b bundle, q string) *queue.Task {
	t.Helper()
	got := b.claim(t, q, 10)
	require.Len(t, got, 1, "one step of a run is ready at a time")
	o := queue.OutcomeSucceeded
	if strings.Contains(got[0].Body, "'fail'") {
		o = queue.OutcomeFailed
	}
	b.finish(t, got[0], o, "")
	return got[0]
}

func getRun(t *testing.T, b bundle, id int64) *queue.Run {
	t.Helper()
	r, err := b.s.GetRun(b.ctx, id)
	require.NoError(t, err, "reading run %d", id)
	return r
}

// stepNames lists a run's step executions by name and task state.
func stepNames(r *queue.Run) []string {
	var out []string
	for _, s := range r.Steps {
		out = append(out, s.Step+"="+string(s.State))
	}
	return out
}

const threeSteps = `{"name": "nightly", "queue": "jq", "steps": [
	{"name": "check",   "body": "SELECT 'fail'", "on_success": "next", "on_failure": "step:notify"},
	{"name": "rebuild", "body": "SELECT 2", "on_success": "quit_success", "on_failure": "step:notify"},
	{"name": "notify",  "body": "SELECT 3", "on_success": "quit_failure", "on_failure": "quit_failure"}]}`

var jobTests = map[string]func(*testing.T, Harness){
	"a_run_follows_the_success_flow_to_the_end": func(t *testing.T, h Harness) {
		b := setup(t, h)
		createJob(t, b, `{"name": "plain", "queue": "jq", "steps": [
			{"name": "a", "body": "SELECT 1"}, {"name": "b", "body": "SELECT 2"}, {"name": "c", "body": "SELECT 3"}]}`)
		started, err := jobEditor(b).Run(b.ctx, "plain", "", "alice")
		require.NoError(t, err)
		require.False(t, started.Duplicate)
		for range 3 {
			r := getRun(t, b, started.RunID)
			require.Equal(t, queue.RunRunning, r.State)
			runStep(t, b, "jq")
		}
		r := getRun(t, b, started.RunID)
		require.Equal(t, queue.RunSucceeded, r.State, r.Reason)
		require.Equal(t, []string{"a=succeeded", "b=succeeded", "c=succeeded"}, stepNames(r))
		require.Equal(t, 3, r.StepsRun)
		require.False(t, r.FinishedAt.IsZero())
		require.Empty(t, b.claim(t, "jq", 10), "nothing runs after the last step")
		j, err := b.s.GetJob(b.ctx, "plain")
		require.NoError(t, err)
		require.NotNil(t, j.LastRun)
		require.Equal(t, started.RunID, j.LastRun.ID)
		require.Equal(t, queue.RunSucceeded, j.LastRun.State)
	},
	"a_failed_step_takes_its_failure_branch": func(t *testing.T, h Harness) {
		b := setup(t, h)
		createJob(t, b, threeSteps)
		started, err := jobEditor(b).Run(b.ctx, "nightly", "", "alice")
		require.NoError(t, err)
		runStep(t, b, "jq") // check fails: go to notify
		require.Equal(t, "notify", b.claimPeek(t, "jq"))
		runStep(t, b, "jq") // notify succeeds: quit reporting failure
		r := getRun(t, b, started.RunID)
		require.Equal(t, queue.RunFailed, r.State)
		require.Equal(t, []string{"check=failed", "notify=succeeded"}, stepNames(r))
		require.Contains(t, r.Reason, "notify")
		require.Contains(t, r.Reason, "quit reporting failure")
	},
	"run_from_a_step_starts_there": func(t *testing.T, h Harness) {
		b := setup(t, h)
		createJob(t, b, threeSteps)
		started, err := jobEditor(b).Run(b.ctx, "nightly", "rebuild", "alice")
		require.NoError(t, err)
		runStep(t, b, "jq")
		r := getRun(t, b, started.RunID)
		require.Equal(t, queue.RunSucceeded, r.State)
		require.Equal(t, queue.TriggerFromStep, r.Trigger)
		require.Equal(t, []string{"rebuild=succeeded"}, stepNames(r))
		_, err = jobEditor(b).Run(b.ctx, "nightly", "nope", "alice")
		require.True(t, queue.IsValidation(err), "a step the job does not have: %v", err)
	},
	"a_go_to_loop_stops_at_the_bound_with_a_reason": func(t *testing.T, h Harness) {
		b := setup(t, h)
		createJob(t, b, `{"name": "loop", "queue": "jq", "steps": [
			{"name": "a", "body": "SELECT 1", "on_success": "step:b"},
			{"name": "b", "body": "SELECT 2", "on_success": "step:a"}]}`)
		started, err := jobEditor(b).Run(b.ctx, "loop", "", "alice")
		require.NoError(t, err)
		loop := func(n int) {
			for i := range n {
				got := b.claim(t, "jq", 10)
				require.Len(t, got, 1, "execution %d", i+1)
				b.finish(t, got[0], queue.OutcomeSucceeded, "")
			}
		}
		loop(10)
		r := getRun(t, b, started.RunID)
		require.Equal(t, queue.RunRunning, r.State)
		require.Equal(t, 11, r.StepsRun, "ten ended, the eleventh enqueued")
		// A loop that has run long: 1,000 claims and finishes take minutes
		// over a slow link, so the count is set forward as if the run had
		// looped 990 times; the ends that follow read it as they read any.
		b.env.Exec(t, fmt.Sprintf("UPDATE readpast_job_runs SET steps_run = %d WHERE id = %d", queue.MaxStepExecutions-9, started.RunID))
		loop(10)
		require.Empty(t, b.claim(t, "jq", 10), "nothing runs after the bound")
		r = getRun(t, b, started.RunID)
		require.Equal(t, queue.RunFailed, r.State)
		require.Equal(t, queue.StepBoundReason, r.Reason)
		require.Equal(t, queue.MaxStepExecutions, r.StepsRun)
		require.Len(t, r.Steps, 20)
		require.Equal(t, []string{"a=succeeded", "b=succeeded"}, stepNames(r)[:2], "a, then b, then a again")
		require.Equal(t, "a", r.Steps[2].Step)
	},
	"a_step_retries_after_its_retry_interval": func(t *testing.T, h Harness) {
		b := setup(t, h)
		createJob(t, b, `{"name": "retry", "queue": "jq", "steps": [
			{"name": "a", "body": "SELECT 'fail'", "retry_attempts": 1, "retry_interval": "7s"}]}`)
		started, err := jobEditor(b).Run(b.ctx, "retry", "", "alice")
		require.NoError(t, err)
		got := b.claim(t, "jq", 10)
		require.Len(t, got, 1)
		res := b.finish(t, got[0], queue.OutcomeFailed, "boom")
		require.Equal(t, queue.StatePending, res.State, "an attempt is left")
		wait := time.Until(res.Retry)
		require.InDelta(t, 7, wait.Seconds(), 1.5, "the retry waits the step's interval, not the exponential back-off")
		require.Empty(t, b.claim(t, "jq", 10), "not before the interval")
		r := getRun(t, b, started.RunID)
		require.Equal(t, queue.RunRunning, r.State, "a step with attempts left is still the run's step")
		require.Len(t, r.Steps, 1)
	},
	"a_lost_step_follows_the_flow_once": func(t *testing.T, h Harness) {
		b := setup(t, h)
		createJob(t, b, threeSteps)
		started, err := jobEditor(b).Run(b.ctx, "nightly", "rebuild", "alice")
		require.NoError(t, err)
		got, err := b.s.Claim(b.ctx, queue.ClaimParams{Queue: "jq", Owner: "dead/w1", Limit: 1, LeaseDuration: time.Millisecond})
		require.NoError(t, err)
		require.Len(t, got, 1)
		time.Sleep(50 * time.Millisecond)
		res := mustReclaim(t, b)
		require.Len(t, res, 1)
		require.Equal(t, queue.StateFailed, res[0].State, "its one attempt is used")
		// The lost step went to its failure branch, once.
		require.Equal(t, "notify", b.claimPeek(t, "jq"))
		require.Empty(t, mustReclaim(t, b))
		runStep(t, b, "jq")
		r := getRun(t, b, started.RunID)
		require.Equal(t, []string{"rebuild=failed", "notify=succeeded"}, stepNames(r))
		require.Equal(t, queue.RunFailed, r.State)
	},
	"cancelling_a_run_cancels_its_step_and_runs_nothing_more": func(t *testing.T, h Harness) {
		b := setup(t, h)
		createJob(t, b, threeSteps)
		ed := jobEditor(b)
		// A pending step is cancelled at once.
		first, err := ed.Run(b.ctx, "nightly", "", "alice")
		require.NoError(t, err)
		st, err := ed.Cancel(b.ctx, first.RunID, "bob")
		require.NoError(t, err)
		require.Equal(t, queue.RunCancelled, st)
		require.Equal(t, queue.StateCancelled, b.get(t, first.TaskID).State)
		require.Empty(t, b.claim(t, "jq", 10))
		_, err = ed.Cancel(b.ctx, first.RunID, "bob")
		require.ErrorIs(t, err, queue.ErrInvalidState, "an ended run")
		// A running step is asked to stop; however it ends, nothing follows.
		second, err := ed.Run(b.ctx, "nightly", "", "alice")
		require.NoError(t, err)
		got := b.claim(t, "jq", 10)
		require.Len(t, got, 1)
		_, err = ed.Cancel(b.ctx, second.RunID, "bob")
		require.NoError(t, err)
		hb, err := b.s.Heartbeat(b.ctx, []queue.Lease{got[0].Lease()}, time.Minute)
		require.NoError(t, err)
		require.Equal(t, []int64{got[0].ID}, hb.CancelRequested)
		b.finish(t, got[0], queue.OutcomeFailed, "stopped")
		require.Empty(t, b.claim(t, "jq", 10), "the failure branch does not run after a cancel")
		r := getRun(t, b, second.RunID)
		require.Equal(t, queue.RunCancelled, r.State)
		require.Equal(t, "cancelled by bob", r.Reason)
		require.Len(t, r.Steps, 1)
		_, err = ed.Cancel(b.ctx, 1<<40, "bob")
		require.ErrorIs(t, err, queue.ErrNotFound)
	},
	"concurrent_run_now_starts_one_run": func(t *testing.T, h Harness) {
		b := setup(t, h)
		createJob(t, b, threeSteps)
		const n = 8
		results := make([]queue.RunStarted, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i], errs[i] = jobEditor(b).Run(b.ctx, "nightly", "", "alice")
			}()
		}
		wg.Wait()
		var runs []int64
		for i := range n {
			require.NoError(t, errs[i])
			if !results[i].Duplicate {
				runs = append(runs, results[i].RunID)
			}
		}
		require.Len(t, runs, 1, "overlap skip: one run however many ask at once")
		for i := range n {
			require.Equal(t, runs[0], results[i].RunID)
		}
		require.Len(t, b.claim(t, "jq", 10), 1)
	},
	"overlap_allow_starts_runs_side_by_side": func(t *testing.T, h Harness) {
		b := setup(t, h)
		createJob(t, b, `{"name": "both", "queue": "jq", "overlap": "allow", "steps": [{"name": "a", "body": "SELECT 1"}]}`)
		one, err := jobEditor(b).Run(b.ctx, "both", "", "alice")
		require.NoError(t, err)
		two, err := jobEditor(b).Run(b.ctx, "both", "", "alice")
		require.NoError(t, err)
		require.False(t, two.Duplicate)
		require.NotEqual(t, one.RunID, two.RunID)
		require.Len(t, b.claim(t, "jq", 10), 2)
	},
	"a_run_keeps_its_plan_when_the_job_changes": func(t *testing.T, h Harness) {
		b := setup(t, h)
		createJob(t, b, threeSteps)
		started, err := jobEditor(b).Run(b.ctx, "nightly", "", "alice")
		require.NoError(t, err)
		d, err := jobs.Parse([]byte(threeSteps))
		require.NoError(t, err)
		d.Steps = d.Steps[:1]
		d.Steps[0].OnFailure = "quit_success"
		_, _, err = jobEditor(b).Replace(b.ctx, d, "bob")
		require.NoError(t, err)
		runStep(t, b, "jq") // check fails: the run's plan still goes to notify
		require.Equal(t, "notify", b.claimPeek(t, "jq"))
		j, err := b.s.GetJob(b.ctx, "nightly")
		require.NoError(t, err)
		require.Len(t, j.Steps, 1)
		require.Equal(t, "alice", j.Owner)
		require.Equal(t, int64(2), j.Version)
		// Deleting the job leaves its runs in the history.
		require.NoError(t, jobEditor(b).Delete(b.ctx, "nightly", "bob"))
		runStep(t, b, "jq")
		r := getRun(t, b, started.RunID)
		require.Equal(t, queue.RunFailed, r.State)
		require.Equal(t, "nightly", r.Job)
		_, err = b.s.GetJob(b.ctx, "nightly")
		require.ErrorIs(t, err, queue.ErrNotFound)
	},
	"runs_list_in_keyset_pages_and_purge_with_history": func(t *testing.T, h Harness) {
		b := setup(t, h)
		createJob(t, b, `{"name": "many", "queue": "jq", "steps": [{"name": "a", "body": "SELECT 1"}]}`)
		var ids []int64
		for range 5 {
			s, err := jobEditor(b).Run(b.ctx, "many", "", "alice")
			require.NoError(t, err)
			ids = append(ids, s.RunID)
			runStep(t, b, "jq")
		}
		page, err := b.s.Runs(b.ctx, queue.RunQuery{Job: "many", Limit: 2})
		require.NoError(t, err)
		require.Equal(t, []int64{ids[4], ids[3]}, runIDs(page))
		page, err = b.s.Runs(b.ctx, queue.RunQuery{Job: "many", Before: ids[3], Limit: 10})
		require.NoError(t, err)
		require.Equal(t, []int64{ids[2], ids[1], ids[0]}, runIDs(page))
		require.Equal(t, queue.RunSucceeded, page[0].State)
		n, err := b.s.PurgeRuns(b.ctx, time.Now().Add(time.Hour), 3)
		require.NoError(t, err)
		require.Equal(t, int64(3), n)
		page, err = b.s.Runs(b.ctx, queue.RunQuery{Job: "many", Limit: 10})
		require.NoError(t, err)
		require.Len(t, page, 2)
		_, err = b.s.GetRun(b.ctx, ids[0])
		require.ErrorIs(t, err, queue.ErrNotFound)
	},
	"a_transactional_step_commits_with_its_end_and_the_next_step": func(t *testing.T, h Harness) {
		b := setup(t, h)
		b.env.Exec(t, "CREATE TABLE fx (tag varchar(40))")
		createJob(t, b, `{"name": "tx", "queue": "jq", "steps": [
			{"name": "load", "body": "INSERT INTO fx VALUES ('load')", "transactional": true},
			{"name": "report", "body": "SELECT 1"}]}`)
		started, err := jobEditor(b).Run(b.ctx, "tx", "", "alice")
		require.NoError(t, err)
		got := b.claim(t, "jq", 10)
		require.Len(t, got, 1)
		res, err := b.runTransactional(t, b.ctx, got[0], got[0].Body)
		require.NoError(t, err)
		require.True(t, res.Committed, "%v", res.BodyErr)
		require.EqualValues(t, 1, effects(t, b, "load"))
		runStep(t, b, "jq")
		r := getRun(t, b, started.RunID)
		require.Equal(t, queue.RunSucceeded, r.State, r.Reason)
		require.Equal(t, []string{"load=succeeded", "report=succeeded"}, stepNames(r))
	},
	"job_changes_are_audited": func(t *testing.T, h Harness) {
		b := setup(t, h)
		createJob(t, b, threeSteps)
		s, err := jobEditor(b).Run(b.ctx, "nightly", "", "alice")
		require.NoError(t, err)
		_, err = jobEditor(b).Cancel(b.ctx, s.RunID, "bob")
		require.NoError(t, err)
		require.NoError(t, jobEditor(b).Delete(b.ctx, "nightly", "carol"))
		recs, err := b.s.Audit(b.ctx, queue.AuditQuery{Limit: 50})
		require.NoError(t, err)
		var got []string
		for _, r := range recs {
			if strings.Contains(r.Action, "job") || strings.Contains(r.Action, "run") {
				got = append(got, r.Actor+":"+r.Action)
			}
		}
		require.Subset(t, got, []string{"alice:create_job", "alice:run_job", "bob:cancel_run", "carol:delete_job"})
	},
}

func runIDs(runs []queue.Run) []int64 {
	out := make([]int64, len(runs))
	for i, r := range runs {
		out[i] = r.ID
	}
	return out
}

// claimPeek returns the step name of the one pending step task of queue q,
// read through the task's run, without claiming it.
func (b bundle) claimPeek(t *testing.T, q string) string {
	t.Helper()
	tasks, err := b.s.List(b.ctx, queue.ListParams{Queue: q, State: queue.StatePending, Limit: 10})
	require.NoError(t, err)
	require.Len(t, tasks, 1, "one pending step")
	runs, err := b.s.Jobs(b.ctx)
	require.NoError(t, err)
	for _, j := range runs {
		if j.LastRun == nil {
			continue
		}
		r := getRun(t, b, j.LastRun.ID)
		for _, s := range r.Steps {
			if s.TaskID == tasks[0].ID {
				return s.Step
			}
		}
	}
	t.Fatalf("task %d is no step of a job's latest run", tasks[0].ID)
	return ""
}

// jobScheduleTests: a job's schedules start runs of it, exactly once per fire
// time however many schedulers race, under the job's overlap policy.
var jobScheduleTests = map[string]func(*testing.T, Harness){
	"a_fire_starts_one_run_however_many_schedulers_race": func(t *testing.T, h Harness) {
		b := setup(t, h)
		createJob(t, b, `{"name": "every", "queue": "jq", "overlap": "allow",
			"steps": [{"name": "a", "body": "SELECT 1"}, {"name": "b", "body": "SELECT 2"}],
			"schedules": [{"cron": "* * * * * *"}]}`)
		s, err := b.s.GetSchedule(b.ctx, jobs.ScheduleName("every", 0))
		require.NoError(t, err)
		require.Equal(t, "every", s.Job)
		const firers, rounds = 6, 3
		for r := range rounds {
			now := s.NextFireAt.Add(time.Duration(r) * time.Second)
			var wg sync.WaitGroup
			var mu sync.Mutex
			won := 0
			for range firers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					sc := schedule.New(b.s, slog.New(slog.DiscardHandler), schedule.Config{Clock: func() time.Time { return now }})
					p, err := sc.FireDue(b.ctx)
					if !assert.NoError(t, err) {
						return
					}
					mu.Lock()
					defer mu.Unlock()
					for _, f := range p.Fired {
						if f.Won {
							won++
						}
					}
				}()
			}
			wg.Wait()
			require.Equal(t, 1, won, "round %d: one firer makes the fire", r)
		}
		runs, err := b.s.Runs(b.ctx, queue.RunQuery{Job: "every", Limit: 10})
		require.NoError(t, err)
		require.Len(t, runs, rounds, "one run per fire time")
		for _, r := range runs {
			require.Equal(t, queue.TriggerSchedule, r.Trigger)
			require.Equal(t, queue.ScheduleCreatedBy(jobs.ScheduleName("every", 0)), r.CreatedBy)
		}
		first := getRun(t, b, runs[len(runs)-1].ID)
		require.Len(t, first.Steps, 1)
		task := b.get(t, first.Steps[0].TaskID)
		require.Equal(t, jobs.ScheduleName("every", 0), task.Schedule, "the run's first step is the fire's task")
	},
	"overlap_skip_skips_a_fire_while_a_run_is_under_way": func(t *testing.T, h Harness) {
		b := setup(t, h)
		createJob(t, b, `{"name": "nightly", "queue": "jq", "steps": [{"name": "a", "body": "SELECT 1"}],
			"schedules": [{"cron": "* * * * * *"}]}`)
		s, err := b.s.GetSchedule(b.ctx, jobs.ScheduleName("nightly", 0))
		require.NoError(t, err)
		// A Run now is under way: the fire skips.
		now, err := jobEditor(b).Run(b.ctx, "nightly", "", "alice")
		require.NoError(t, err)
		p := b.fireAt(t, s.NextFireAt)
		require.Len(t, p.Fired, 1)
		require.Equal(t, queue.FireSkippedOverlap, p.Fired[0].Outcome)
		runStep(t, b, "jq")
		require.Equal(t, queue.RunSucceeded, getRun(t, b, now.RunID).State)
		p = b.fireAt(t, s.NextFireAt.Add(time.Second))
		require.Len(t, p.Fired, 1)
		require.Equal(t, queue.FireEnqueued, p.Fired[0].Outcome, "the run ended: the next fire starts one")
		runs, err := b.s.Runs(b.ctx, queue.RunQuery{Job: "nightly", Limit: 10})
		require.NoError(t, err)
		require.Len(t, runs, 2)
	},
	"a_disabled_job_s_schedules_are_paused_and_go_with_the_job": func(t *testing.T, h Harness) {
		b := setup(t, h)
		j, _, err := jobEditor(b).CreateFromJSON(b.ctx, []byte(`{"name": "imported", "steps": [{"name": "a", "body": "SELECT 1"}],
			"schedules": [{"cron": "0 1 * * *", "time_zone": "Europe/Paris"}, {"cron": "0 13 * * *"}]}`), false, "importer")
		require.NoError(t, err)
		require.False(t, j.Enabled)
		for i := range 2 {
			s, err := b.s.GetSchedule(b.ctx, jobs.ScheduleName("imported", i))
			require.NoError(t, err)
			require.True(t, s.Paused, "a disabled job does not fire")
		}
		s, err := b.s.GetSchedule(b.ctx, jobs.ScheduleName("imported", 0))
		require.NoError(t, err)
		require.Equal(t, "Europe/Paris", s.TimeZone)
		// Enabling it resumes its schedules.
		d, err := jobs.DefinitionOf(j)
		require.NoError(t, err)
		yes := true
		d.Enabled = &yes
		_, _, err = jobEditor(b).Replace(b.ctx, d, "bob")
		require.NoError(t, err)
		s, err = b.s.GetSchedule(b.ctx, jobs.ScheduleName("imported", 1))
		require.NoError(t, err)
		require.False(t, s.Paused)
		require.False(t, s.NextFireAt.IsZero())
		// A schedule name taken by another schedule refuses the job, whole.
		b.createSchedule(t, queue.ScheduleDef{Name: "other:1", Cron: "@daily", Task: queue.ScheduleTask{Body: "SELECT 1"}})
		_, _, err = jobEditor(b).CreateFromJSON(b.ctx, []byte(`{"name": "other", "steps": [{"name": "a", "body": "SELECT 1"}],
			"schedules": [{"cron": "@daily"}]}`), true, "alice")
		require.ErrorIs(t, err, queue.ErrExists)
		_, err = b.s.GetJob(b.ctx, "other")
		require.ErrorIs(t, err, queue.ErrNotFound, "no half-made job")
		// Deleting the job deletes its schedules.
		require.NoError(t, jobEditor(b).Delete(b.ctx, "imported", "bob"))
		_, err = b.s.GetSchedule(b.ctx, jobs.ScheduleName("imported", 0))
		require.ErrorIs(t, err, queue.ErrNotFound)
	},
}
