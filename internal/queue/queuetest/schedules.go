package queuetest

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/schedule"
	"readpast/internal/testenv"
)

// Schedules (docs/SCHEDULES.md): definitions, their validation and audit,
// and fires that create one task per fire time however many schedulers race.
var scheduleTests = map[string]func(*testing.T, Harness){
	"create_read_update_pause_resume_delete_audited": func(t *testing.T, h Harness) {
		b := setup(t, h)
		before := time.Now()
		s, err := b.ed.CreateSchedule(b.ctx, queue.ScheduleDef{Name: "nightly", Cron: "0 1 * * *", TimeZone: "Europe/Paris",
			Task: queue.ScheduleTask{Queue: "maint", Body: "EXEC rebuild_indexes"}}, "ann")
		require.NoError(t, err)
		require.Equal(t, queue.OverlapSkip, s.Overlap, "overlap defaults to skip")
		require.Equal(t, queue.MisfireRunOnce, s.Misfire, "misfire defaults to run once")
		require.Equal(t, queue.DefaultPriority, *s.Task.Priority)
		require.Equal(t, queue.DefaultMaxAttempts, s.Task.MaxAttempts)
		require.Equal(t, "ann", s.CreatedBy)
		paris, _ := time.LoadLocation("Europe/Paris")
		first := s.NextFireAt.In(paris)
		require.True(t, first.After(before) && first.Before(before.Add(25*time.Hour)), "next fire %s", first)
		require.Equal(t, "01:00:00", first.Format(time.TimeOnly), "fires at 01:00 Paris time")
		require.Zero(t, s.LastTaskID)

		_, err = b.ed.CreateSchedule(b.ctx, queue.ScheduleDef{Name: "nightly", Cron: "@daily", Task: queue.ScheduleTask{Body: "SELECT 1"}}, "bob")
		require.ErrorIs(t, err, queue.ErrExists)

		body := "EXEC rebuild_indexes @online = 1"
		got, err := b.ed.UpdateSchedule(b.ctx, "nightly", queue.ScheduleUpdate{Body: &body, Actor: "bob"})
		require.NoError(t, err)
		require.Equal(t, body, got.Task.Body)
		require.True(t, s.NextFireAt.Equal(got.NextFireAt), "an edit of the body keeps the next fire time")
		require.Greater(t, got.Version, s.Version)
		require.Equal(t, "bob", got.UpdatedBy)

		cron := "30 2 * * *"
		got, err = b.ed.UpdateSchedule(b.ctx, "nightly", queue.ScheduleUpdate{Cron: &cron, Actor: "bob"})
		require.NoError(t, err)
		require.Equal(t, "02:30:00", got.NextFireAt.In(paris).Format(time.TimeOnly), "a new cron moves the next fire time")

		got, err = b.ed.UpdateSchedule(b.ctx, "nightly", queue.ScheduleUpdate{Paused: ptr(true), Actor: "bob"})
		require.NoError(t, err)
		require.True(t, got.Paused)
		require.True(t, got.NextFireAt.IsZero(), "a paused schedule is due never")
		got, err = b.ed.UpdateSchedule(b.ctx, "nightly", queue.ScheduleUpdate{Paused: ptr(false), Actor: "bob"})
		require.NoError(t, err)
		require.False(t, got.NextFireAt.IsZero(), "a resumed schedule is due again")

		_, err = b.ed.CreateSchedule(b.ctx, queue.ScheduleDef{Name: "a-first", Cron: "@hourly", Task: queue.ScheduleTask{Body: "SELECT 1"}}, "ann")
		require.NoError(t, err)
		all, err := b.s.Schedules(b.ctx)
		require.NoError(t, err)
		require.Len(t, all, 2)
		require.Equal(t, "a-first", all[0].Name, "listed by name")

		require.NoError(t, b.ed.DeleteSchedule(b.ctx, "nightly", "carol"))
		_, err = b.s.GetSchedule(b.ctx, "nightly")
		require.ErrorIs(t, err, queue.ErrNotFound)
		require.ErrorIs(t, b.ed.DeleteSchedule(b.ctx, "nightly", "carol"), queue.ErrNotFound)
		_, err = b.ed.UpdateSchedule(b.ctx, "nightly", queue.ScheduleUpdate{Body: &body, Actor: "bob"})
		require.ErrorIs(t, err, queue.ErrNotFound)

		for action, n := range map[string]int64{"create_schedule": 2, "update_schedule": 2, "pause_schedule": 1,
			"resume_schedule": 1, "delete_schedule": 1} {
			require.Equal(t, n, b.env.QueryInt(t, "SELECT count(*) FROM readpast_audit WHERE action = '"+action+"'"), action)
		}
		require.Equal(t, int64(1), b.env.QueryInt(t, "SELECT count(*) FROM readpast_audit WHERE action = 'delete_schedule' AND actor = 'carol' AND target = 'schedule nightly'"))
	},
	"bad_definitions_name_the_field_and_write_nothing": func(t *testing.T, h Harness) {
		b := setup(t, h)
		good := func() queue.ScheduleDef {
			return queue.ScheduleDef{Name: "s", Cron: "0 1 * * *", Task: queue.ScheduleTask{Body: "SELECT 1"}}
		}
		for field, change := range map[string]func(*queue.ScheduleDef){
			"name":         func(d *queue.ScheduleDef) { d.Name = "no spaces" },
			"cron":         func(d *queue.ScheduleDef) { d.Cron = "0 1 * *" },
			"time_zone":    func(d *queue.ScheduleDef) { d.TimeZone = "Mars/Olympus_Mons" },
			"body":         func(d *queue.ScheduleDef) { d.Task.Body = strings.Repeat("x", queue.DefaultMaxBodyBytes+1) },
			"priority":     func(d *queue.ScheduleDef) { d.Task.Priority = intp(-1) },
			"max_attempts": func(d *queue.ScheduleDef) { d.Task.MaxAttempts = 5000 },
			"queue":        func(d *queue.ScheduleDef) { d.Task.Queue = "bad queue" },
			"overlap":      func(d *queue.ScheduleDef) { d.Overlap = "queue" },
			"misfire":      func(d *queue.ScheduleDef) { d.Misfire = "all" },
		} {
			d := good()
			change(&d)
			_, err := b.ed.CreateSchedule(b.ctx, d, "ann")
			var ve *queue.ValidationError
			require.ErrorAs(t, err, &ve, field)
			require.Equal(t, field, ve.Field, "%v", err)
		}
		never := good()
		never.Cron = "0 0 30 2 *"
		_, err := b.ed.CreateSchedule(b.ctx, never, "ann")
		var ve *queue.ValidationError
		require.ErrorAs(t, err, &ve)
		require.Equal(t, "cron", ve.Field)
		require.Contains(t, ve.Reason, "never fire")

		all, err := b.s.Schedules(b.ctx)
		require.NoError(t, err)
		require.Empty(t, all, "nothing is written on refusal")
		require.Zero(t, b.env.QueryInt(t, "SELECT count(*) FROM readpast_audit"))

		_, err = b.ed.CreateSchedule(b.ctx, good(), "ann")
		require.NoError(t, err)
		bad, zone := "61 * * * *", "Nowhere/Else"
		for field, u := range map[string]queue.ScheduleUpdate{"cron": {Cron: &bad}, "time_zone": {TimeZone: &zone}} {
			_, err := b.ed.UpdateSchedule(b.ctx, "s", u)
			require.ErrorAs(t, err, &ve, field)
			require.Equal(t, field, ve.Field)
		}
		got, err := b.s.GetSchedule(b.ctx, "s")
		require.NoError(t, err)
		require.Equal(t, "0 1 * * *", got.Cron, "a refused update changes nothing")
		require.Equal(t, int64(1), b.env.QueryInt(t, "SELECT count(*) FROM readpast_audit"))
	},
	"one_task_per_fire_time_under_many_concurrent_firers": func(t *testing.T, h Harness) {
		b := setup(t, h)
		s := b.createSchedule(t, queue.ScheduleDef{Name: "every-second", Cron: "* * * * * *", Overlap: queue.OverlapAllow,
			Task: queue.ScheduleTask{Queue: "sec", Body: "SELECT 1"}})
		stores := []queue.Store{b.s}
		for range 2 {
			stores = append(stores, testenv.OpenStore(t, b.env.DSN, queue.Options{}))
		}
		const firers, rounds = 12, 15
		start := s.NextFireAt
		for r := range rounds {
			now := start.Add(time.Duration(r) * time.Second)
			var wg sync.WaitGroup
			var mu sync.Mutex
			var won []queue.Fired
			errs := make(chan error, firers)
			for g := range firers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					sc := schedule.New(stores[g%len(stores)], slog.New(slog.DiscardHandler), schedule.Config{Clock: func() time.Time { return now }})
					p, err := sc.FireDue(b.ctx)
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					defer mu.Unlock()
					for _, f := range p.Fired {
						if f.Won {
							won = append(won, f)
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			require.Len(t, won, 1, "round %d: exactly one firer makes the fire of %s", r, now)
			require.Equal(t, queue.FireEnqueued, won[0].Outcome)
		}
		tasks := b.scheduleTasks(t, "every-second")
		require.Len(t, tasks, rounds, "one task per fire time")
		for i, task := range tasks { // newest first
			want := start.Add(time.Duration(rounds-1-i) * time.Second)
			require.True(t, want.Equal(task.FireAt), "task %d is the run of %s, not %s", task.ID, want, task.FireAt)
			require.Equal(t, "every-second", task.Schedule)
			require.Equal(t, queue.ScheduleCreatedBy("every-second"), task.CreatedBy)
		}
	},
	"a_plan_from_a_changed_schedule_fires_nothing": func(t *testing.T, h Harness) {
		b := setup(t, h)
		s := b.createSchedule(t, queue.ScheduleDef{Name: "x", Cron: "* * * * * *", Task: queue.ScheduleTask{Body: "SELECT 1"}})
		due, err := b.s.DueSchedules(b.ctx, s.NextFireAt, 10)
		require.NoError(t, err)
		require.Len(t, due.Due, 1)
		plan, err := schedule.Plan(due.Due[0], due.Now, schedule.DefaultMisfireGrace)
		require.NoError(t, err)
		body := "SELECT 2"
		_, err = b.ed.UpdateSchedule(b.ctx, "x", queue.ScheduleUpdate{Body: &body, Actor: "ann"})
		require.NoError(t, err)
		fired, err := b.s.FireSchedule(b.ctx, plan)
		require.NoError(t, err)
		require.False(t, fired.Won, "the schedule changed since the plan was made")
		require.Empty(t, b.scheduleTasks(t, "x"))

		p := b.fireAt(t, s.NextFireAt)
		require.Len(t, p.Fired, 1)
		require.Equal(t, "SELECT 2", b.get(t, p.Fired[0].TaskID).Body, "a fresh plan fires the new definition")
		again, err := b.s.FireSchedule(b.ctx, plan)
		require.NoError(t, err)
		require.False(t, again.Won, "a fire time is made once")
	},
	"overlap_skip_waits_for_the_latest_run_allow_does_not": func(t *testing.T, h Harness) {
		b := setup(t, h)
		skip := b.createSchedule(t, queue.ScheduleDef{Name: "skip", Cron: "* * * * * *", Task: queue.ScheduleTask{Queue: "ov", Body: "SELECT 1"}})
		allow := b.createSchedule(t, queue.ScheduleDef{Name: "allow", Cron: "* * * * * *", Overlap: queue.OverlapAllow,
			Task: queue.ScheduleTask{Queue: "ov2", Body: "SELECT 1"}})
		at := skip.NextFireAt.Add(time.Second) // both are due by then, however long the creates took
		if allow.NextFireAt.After(skip.NextFireAt) {
			at = allow.NextFireAt.Add(time.Second)
		}
		first := b.fireAt(t, at)
		require.Len(t, first.Fired, 2)
		for _, f := range first.Fired {
			require.Equal(t, queue.FireEnqueued, f.Outcome)
		}
		runs := b.scheduleTasks(t, "skip")
		require.Len(t, runs, 1)

		second := b.fireAt(t, at.Add(time.Second))
		byOutcome := map[queue.FireOutcome]queue.Fired{}
		for _, f := range second.Fired {
			byOutcome[f.Outcome] = f
		}
		require.Equal(t, runs[0].ID, byOutcome[queue.FireSkippedOverlap].TaskID, "skip: the pending run holds the fire back")
		require.Contains(t, byOutcome, queue.FireEnqueued, "allow: a second run while the first waits")
		got, err := b.s.GetSchedule(b.ctx, "skip")
		require.NoError(t, err)
		require.Equal(t, queue.FireSkippedOverlap, got.LastFireOutcome)
		require.Equal(t, runs[0].ID, got.LastTaskID)

		claimed := b.claim(t, "ov", 1)
		require.Len(t, claimed, 1)
		third := b.fireAt(t, at.Add(2*time.Second))
		require.Len(t, b.scheduleTasks(t, "skip"), 1, "a running run holds the fire back too")
		require.Len(t, third.Fired, 2)
		b.finish(t, claimed[0], queue.OutcomeSucceeded, "")
		b.fireAt(t, at.Add(3*time.Second))
		require.Len(t, b.scheduleTasks(t, "skip"), 2, "a finished run does not")
		require.Len(t, b.scheduleTasks(t, "allow"), 4)
	},
	"misfire_runs_once_for_missed_fire_times_or_skips_them": func(t *testing.T, h Harness) {
		b := setup(t, h)
		once := b.createSchedule(t, queue.ScheduleDef{Name: "once", Cron: "0 * * * *", Task: queue.ScheduleTask{Body: "SELECT 1"}})
		b.createSchedule(t, queue.ScheduleDef{Name: "skip", Cron: "0 * * * *", Misfire: queue.MisfireSkip, Task: queue.ScheduleTask{Body: "SELECT 1"}})
		// Every node was down for five and a half hours: six fire times passed.
		missedUntil := once.NextFireAt.Add(5*time.Hour + 30*time.Minute)
		b.fireAt(t, missedUntil)
		latest := once.NextFireAt.Add(5 * time.Hour)

		runs := b.scheduleTasks(t, "once")
		require.Len(t, runs, 1, "run once for all missed fire times")
		require.True(t, latest.Equal(runs[0].FireAt), "the run is of the latest missed fire time")
		got, err := b.s.GetSchedule(b.ctx, "once")
		require.NoError(t, err)
		require.Equal(t, queue.FireEnqueued, got.LastFireOutcome)
		require.Equal(t, 5, got.LastFireMissed, "it stands for five earlier fire times")
		require.True(t, latest.Add(time.Hour).Equal(got.NextFireAt), "then the next fire time after now")

		require.Empty(t, b.scheduleTasks(t, "skip"), "skip: nothing runs for missed fire times")
		got, err = b.s.GetSchedule(b.ctx, "skip")
		require.NoError(t, err)
		require.Equal(t, queue.FireSkippedMisfire, got.LastFireOutcome)
		require.Equal(t, 6, got.LastFireMissed)
		require.True(t, latest.Equal(got.LastFireAt))

		// Back within the grace of a fire time after downtime, skip still runs that one.
		onTime := got.NextFireAt.Add(3*time.Hour + 10*time.Second)
		b.fireAt(t, onTime)
		runs = b.scheduleTasks(t, "skip")
		require.Len(t, runs, 1)
		require.True(t, got.NextFireAt.Add(3*time.Hour).Equal(runs[0].FireAt))
		got, err = b.s.GetSchedule(b.ctx, "skip")
		require.NoError(t, err)
		require.Equal(t, 3, got.LastFireMissed, "the three before it were skipped")
	},
	"run_now_creates_a_run_outside_the_fire_times": func(t *testing.T, h Harness) {
		b := setup(t, h)
		b.createSchedule(t, queue.ScheduleDef{Name: "adhoc", Cron: "0 1 * * *", Paused: true, Task: queue.ScheduleTask{Queue: "rn", Body: "SELECT 1"}})
		b.createSchedule(t, queue.ScheduleDef{Name: "many", Cron: "0 1 * * *", Overlap: queue.OverlapAllow, Task: queue.ScheduleTask{Queue: "rn", Body: "SELECT 2"}})
		res, err := b.ed.RunSchedule(b.ctx, "adhoc", "ann")
		require.NoError(t, err)
		require.False(t, res.Duplicate, "a paused schedule can be run by hand")
		task := b.get(t, res.ID)
		require.Equal(t, "adhoc", task.Schedule)
		require.True(t, task.FireAt.IsZero(), "a run now is of no fire time")
		require.Equal(t, "ann", task.CreatedBy)

		dup, err := b.ed.RunSchedule(b.ctx, "adhoc", "bob")
		require.NoError(t, err)
		require.Equal(t, queue.Enqueued{ID: res.ID, Duplicate: true}, dup, "overlap skip: the unfinished run is returned")
		for range 2 {
			r, err := b.ed.RunSchedule(b.ctx, "many", "ann")
			require.NoError(t, err)
			require.False(t, r.Duplicate)
		}
		require.Len(t, b.scheduleTasks(t, "many"), 2)
		got, err := b.s.GetSchedule(b.ctx, "adhoc")
		require.NoError(t, err)
		require.Equal(t, res.ID, got.LastTaskID)
		require.True(t, got.NextFireAt.IsZero(), "running it by hand does not resume it")

		_, err = b.ed.RunSchedule(b.ctx, "nope", "ann")
		require.ErrorIs(t, err, queue.ErrNotFound)
		require.Equal(t, int64(3), b.env.QueryInt(t, "SELECT count(*) FROM readpast_audit WHERE action = 'run_schedule'"))
	},
	"last_run_and_the_schedule_filter": func(t *testing.T, h Harness) {
		b := setup(t, h)
		s := b.createSchedule(t, queue.ScheduleDef{Name: "lr", Cron: "* * * * * *", Overlap: queue.OverlapAllow, Task: queue.ScheduleTask{Queue: "lr", Body: "SELECT 1"}})
		b.createSchedule(t, queue.ScheduleDef{Name: "other", Cron: "* * * * * *", Task: queue.ScheduleTask{Queue: "lr", Body: "SELECT 1"}})
		b.enqueue(t, queue.NewTask{Queue: "lr", Body: "SELECT 1"})
		b.fireAt(t, s.NextFireAt.Add(time.Second))
		p := b.fireAt(t, s.NextFireAt.Add(2*time.Second))
		got, err := b.s.GetSchedule(b.ctx, "lr")
		require.NoError(t, err)
		require.Equal(t, queue.StatePending, got.LastTaskState)
		mine := b.scheduleTasks(t, "lr")
		require.Len(t, mine, 2, "the filter keeps the schedule's tasks only")
		require.Equal(t, got.LastTaskID, mine[0].ID, "the latest run is the newest task")
		var firedIDs []int64
		for _, f := range p.Fired {
			firedIDs = append(firedIDs, f.TaskID)
		}
		require.Contains(t, firedIDs, mine[0].ID, "the second fire made the newest run")

		claimed := b.claim(t, "lr", 10)
		i := slices.IndexFunc(claimed, func(c *queue.Task) bool { return c.ID == got.LastTaskID })
		require.GreaterOrEqual(t, i, 0, "the latest run was claimed")
		b.finish(t, claimed[i], queue.OutcomeFailed, "boom")
		got, err = b.s.GetSchedule(b.ctx, "lr")
		require.NoError(t, err)
		require.Equal(t, queue.StatePending, got.LastTaskState, "a failed attempt with attempts left waits for its retry")
		all, err := b.s.Schedules(b.ctx)
		require.NoError(t, err)
		require.Equal(t, got.LastTaskID, all[0].LastTaskID, "the list shows the latest run too")

		_, err = b.s.List(b.ctx, queue.ListParams{Schedule: "not a name"})
		var ve *queue.ValidationError
		require.ErrorAs(t, err, &ve)
		require.Equal(t, "schedule", ve.Field)
	},
	"due_reads_only_what_is_due": func(t *testing.T, h Harness) {
		b := setup(t, h)
		soon := b.createSchedule(t, queue.ScheduleDef{Name: "soon", Cron: "* * * * * *", Task: queue.ScheduleTask{Body: "SELECT 1"}})
		b.createSchedule(t, queue.ScheduleDef{Name: "paused", Cron: "* * * * * *", Paused: true, Task: queue.ScheduleTask{Body: "SELECT 1"}})
		later := b.createSchedule(t, queue.ScheduleDef{Name: "later", Cron: "0 0 1 1 *", Task: queue.ScheduleTask{Body: "SELECT 1"}})

		due, err := b.s.DueSchedules(b.ctx, soon.NextFireAt.Add(-time.Millisecond), 10)
		require.NoError(t, err)
		require.Empty(t, due.Due)
		require.True(t, soon.NextFireAt.Equal(due.Next), "the soonest next fire time")

		due, err = b.s.DueSchedules(b.ctx, soon.NextFireAt.Add(time.Minute), 10)
		require.NoError(t, err)
		require.Len(t, due.Due, 1, "a paused schedule is never due")
		require.Equal(t, "soon", due.Due[0].Name)
		require.True(t, later.NextFireAt.Equal(due.Next))

		due, err = b.s.DueSchedules(b.ctx, time.Time{}, 10)
		require.NoError(t, err)
		require.WithinDuration(t, time.Now(), due.Now, time.Minute, "a zero time is the database's now")
		_, err = b.s.DueSchedules(b.ctx, time.Time{}, 0)
		require.True(t, queue.IsValidation(err))
	},
}

// createSchedule creates d by "test" and fails the test on error.
func (b bundle) createSchedule(t *testing.T, d queue.ScheduleDef) *queue.Schedule {
	t.Helper()
	s, err := b.ed.CreateSchedule(b.ctx, d, "test")
	require.NoError(t, err, "creating schedule %s", d.Name)
	return s
}

// fireAt runs one look of a scheduler whose clock says now.
func (b bundle) fireAt(t *testing.T, now time.Time) schedule.Pass {
	t.Helper()
	sc := schedule.New(b.s, slog.New(slog.DiscardHandler), schedule.Config{Clock: func() time.Time { return now }})
	p, err := sc.FireDue(b.ctx)
	require.NoError(t, err, "firing the schedules due at %s", now)
	for _, f := range p.Fired {
		require.True(t, f.Won, "one scheduler alone makes every fire")
	}
	return p
}

// scheduleTasks lists the tasks a schedule created, newest first.
func (b bundle) scheduleTasks(t *testing.T, name string) []*queue.Task {
	t.Helper()
	tasks, err := b.s.List(b.ctx, queue.ListParams{Schedule: name, Limit: 1000})
	require.NoError(t, err, "listing the tasks of schedule %s", name)
	for _, task := range tasks {
		if task.Schedule != name {
			require.Fail(t, fmt.Sprintf("task %d of schedule %q is listed for %q", task.ID, task.Schedule, name))
		}
	}
	return tasks
}
