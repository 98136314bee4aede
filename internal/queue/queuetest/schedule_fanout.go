package queuetest

import (
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/ops"
	"readpast/internal/queue"
	"readpast/internal/schedule"
	"readpast/internal/testenv"
)

// Schedules that fan out (docs/SCHEDULES.md, "Fan-out"): each fire creates
// one task per target the selectors match among the targets the live nodes
// publish, grouped as one fan-out with its limit, in the fire's transaction,
// once per fire time however many schedulers race.
var scheduleFanOutTests = map[string]func(*testing.T, Harness){
	"one_fire_makes_one_task_per_target_once_under_racing_schedulers": func(t *testing.T, h Harness) {
		b := setup(t, h)
		b.publishTargets(t)
		s := b.createSchedule(t, queue.ScheduleDef{Name: "nightly-prod", Cron: "* * * * * *", Overlap: queue.OverlapAllow,
			Task: queue.ScheduleTask{Queue: "fan", Body: "EXEC dbo.check_db", Targets: []string{"tag:prod"}, FanOutLimit: 2}})
		require.Equal(t, []string{"tag:prod"}, s.Task.Targets)
		require.Equal(t, 2, s.Task.FanOutLimit)
		stores := []queue.Store{b.s}
		for range 2 {
			stores = append(stores, testenv.OpenStore(t, b.env.DSN, queue.Options{}))
		}
		const firers, rounds = 8, 3
		start := s.NextFireAt
		for r := range rounds {
			now := start.Add(time.Duration(r) * time.Second)
			var (
				wg  sync.WaitGroup
				mu  sync.Mutex
				won []queue.Fired
			)
			errs := make(chan error, firers)
			for g := range firers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					st := stores[g%len(stores)]
					sc := schedule.New(st, slog.New(slog.DiscardHandler), schedule.Config{Clock: func() time.Time { return now },
						Resolve: ops.FanOutResolver(st, time.Minute)})
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
		tasks := b.scheduleTasks(t, "nightly-prod")
		require.Len(t, tasks, 3*rounds, "three prod targets, one task each per fire time")
		byGroup := map[string][]*queue.Task{}
		for _, task := range tasks {
			require.True(t, queue.IsFanOutGroup(task.Group), "task %d is in a fan-out group, not %q", task.ID, task.Group)
			byGroup[task.Group] = append(byGroup[task.Group], task)
		}
		require.Len(t, byGroup, rounds, "one fan-out per fire time")
		groups, err := b.s.Groups(b.ctx)
		require.NoError(t, err)
		for g, ts := range byGroup {
			var targets []string
			for _, task := range ts {
				targets = append(targets, task.Target)
				require.True(t, ts[0].FireAt.Equal(task.FireAt), "a fan-out's tasks share their fire time")
				require.Equal(t, "EXEC dbo.check_db", task.Body)
				require.Equal(t, queue.ScheduleCreatedBy("nightly-prod"), task.CreatedBy)
			}
			slices.Sort(targets)
			require.Equal(t, []string{"db1", "db2", "db3"}, targets, "fan-out %s reaches every prod target of the live nodes", g)
			i := slices.IndexFunc(groups, func(x queue.Group) bool { return x.Name == g })
			require.GreaterOrEqual(t, i, 0, "the fan-out's group %s exists", g)
			require.Equal(t, 2, groups[i].MaxRunning, "the fan-out's limit")
		}
		got, err := b.s.GetSchedule(b.ctx, "nightly-prod")
		require.NoError(t, err)
		require.Equal(t, queue.FireEnqueued, got.LastFireOutcome)
		require.True(t, start.Add((rounds-1)*time.Second).Equal(got.LastFireAt))
	},
	"overlap_skip_waits_for_every_task_of_the_fanout": func(t *testing.T, h Harness) {
		b := setup(t, h)
		b.publishTargets(t)
		s := b.createSchedule(t, queue.ScheduleDef{Name: "prod-sweep", Cron: "* * * * * *",
			Task: queue.ScheduleTask{Queue: "fan", Body: "SELECT 1", MaxAttempts: 1, Targets: []string{"db1", "tag:prod"}}})
		audits := b.env.QueryInt(t, "SELECT count(*) FROM readpast_audit")
		b.fireFanOut(t, s.NextFireAt)
		tasks := b.scheduleTasks(t, "prod-sweep")
		require.Len(t, tasks, 3, "db1 named and tagged counts once")
		got, err := b.s.GetSchedule(b.ctx, "prod-sweep")
		require.NoError(t, err)
		claimed := b.claimTarget(t, "fan", got.LastTaskID)
		b.finish(t, claimed, queue.OutcomeSucceeded, "")

		p := b.fireFanOut(t, s.NextFireAt.Add(time.Second))
		require.Len(t, p.Fired, 1)
		require.Equal(t, queue.FireSkippedOverlap, p.Fired[0].Outcome, "two tasks of the fan-out are still pending")
		require.Len(t, b.scheduleTasks(t, "prod-sweep"), 3)

		for _, task := range tasks {
			if task.ID != claimed.ID {
				b.finish(t, b.claimTarget(t, "fan", task.ID), queue.OutcomeFailed, "login failed")
			}
		}
		p = b.fireFanOut(t, s.NextFireAt.Add(2*time.Second))
		require.Equal(t, queue.FireEnqueued, p.Fired[0].Outcome, "every task of the fan-out ended")
		require.Len(t, b.scheduleTasks(t, "prod-sweep"), 6)
		require.Equal(t, audits, b.env.QueryInt(t, "SELECT count(*) FROM readpast_audit"),
			"fires are not audited, nor the groups they make: a schedule firing every minute would grow the audit log")
	},
	"a_fire_whose_targets_match_nothing_fails_and_is_tried_again": func(t *testing.T, h Harness) {
		b := setup(t, h)
		b.publishTargets(t)
		s := b.createSchedule(t, queue.ScheduleDef{Name: "eu", Cron: "* * * * * *",
			Task: queue.ScheduleTask{Queue: "fan", Body: "SELECT 1", Targets: []string{"tag:eu"}}})
		p := b.fireFanOut(t, s.NextFireAt)
		require.Empty(t, p.Fired, "no live node has a target tagged eu: nothing fired")
		require.Empty(t, b.scheduleTasks(t, "eu"))
		got, err := b.s.GetSchedule(b.ctx, "eu")
		require.NoError(t, err)
		require.True(t, s.NextFireAt.Equal(got.NextFireAt), "the fire time stays due")
		require.Equal(t, s.Version, got.Version, "a failed fire writes nothing")

		info := `{"targets":[{"name":"db9","dialect":"postgres","tags":["eu"]}]}`
		require.NoError(t, b.s.RegisterNode(b.ctx, queue.Node{ID: "n3", Hostname: "h3", PID: 33, Version: "v1", Info: info}))
		p = b.fireFanOut(t, s.NextFireAt)
		require.Len(t, p.Fired, 1)
		require.Equal(t, queue.FireEnqueued, p.Fired[0].Outcome)
		tasks := b.scheduleTasks(t, "eu")
		require.Len(t, tasks, 1)
		require.Equal(t, "db9", tasks[0].Target)
	},
	"run_now_fans_out_with_the_targets_resolved_now": func(t *testing.T, h Harness) {
		b := setup(t, h)
		b.publishTargets(t)
		b.createSchedule(t, queue.ScheduleDef{Name: "adhoc", Cron: "@daily",
			Task: queue.ScheduleTask{Queue: "fan", Body: "SELECT 1", Targets: []string{"tag:prod", "db4"}, FanOutLimit: 1}})
		_, err := b.s.RunSchedule(b.ctx, "adhoc", "ann", nil)
		require.Error(t, err, "a fan-out's run needs its targets resolved")
		stale := &queue.FanOutFire{Selectors: []string{"db4"}, Targets: []string{"db4"}, Group: "fanout-stale", Limit: 1}
		_, err = b.s.RunSchedule(b.ctx, "adhoc", "ann", stale)
		require.Error(t, err, "resolved from other selectors than the schedule's")
		require.Empty(t, b.scheduleTasks(t, "adhoc"), "a refused run writes nothing")

		ed := schedule.Editor{Store: b.s, Resolve: ops.FanOutResolver(b.s, time.Minute)}
		run, err := ed.RunSchedule(b.ctx, "adhoc", "ann")
		require.NoError(t, err)
		require.False(t, run.Duplicate)
		tasks := b.scheduleTasks(t, "adhoc")
		require.Len(t, tasks, 4, "db1, db2, db3 (prod) and db4")
		var targets []string
		for _, task := range tasks {
			require.Equal(t, b.get(t, run.ID).Group, task.Group, "one fan-out")
			require.True(t, task.FireAt.IsZero(), "a Run now has no fire time")
			targets = append(targets, task.Target)
		}
		slices.Sort(targets)
		require.Equal(t, []string{"db1", "db2", "db3", "db4"}, targets)
		again, err := ed.RunSchedule(b.ctx, "adhoc", "ann")
		require.NoError(t, err)
		require.True(t, again.Duplicate, "overlap skip: the fan-out is unfinished")
		require.Len(t, b.scheduleTasks(t, "adhoc"), 4)
	},
	"a_fanout_template_is_checked_and_kept": func(t *testing.T, h Harness) {
		b := setup(t, h)
		var ve *queue.ValidationError
		for field, task := range map[string]queue.ScheduleTask{
			"target":        {Body: "x", Targets: []string{"db1"}, Target: "db2"},
			"group":         {Body: "x", Targets: []string{"db1"}, Group: "g"},
			"transactional": {Body: "x", Targets: []string{"db1"}, Transactional: true},
			"fanout_limit":  {Body: "x", FanOutLimit: 2},
			"targets":       {Body: "x", Targets: []string{"tag:"}},
		} {
			_, err := b.ed.CreateSchedule(b.ctx, queue.ScheduleDef{Name: "bad", Cron: "@daily", Task: task}, "ann")
			require.ErrorAs(t, err, &ve, field)
			require.Equal(t, field, ve.Field)
		}
		_, err := b.ed.CreateSchedule(b.ctx, queue.ScheduleDef{Name: "bad", Cron: "@daily",
			Task: queue.ScheduleTask{Body: "x", Targets: []string{"db1", "db1"}}}, "ann")
		require.ErrorAs(t, err, &ve, "a selector twice")
		require.Empty(t, b.schedules(t), "a refused schedule is not written")

		b.createSchedule(t, queue.ScheduleDef{Name: "one", Cron: "@daily", Task: queue.ScheduleTask{Body: "x", Target: "db1"}})
		sels, limit := []string{"tag:prod", "db4"}, 3
		got, err := b.ed.UpdateSchedule(b.ctx, "one", queue.ScheduleUpdate{Target: ptr(""), Targets: &sels, FanOutLimit: &limit, Actor: "ann"})
		require.NoError(t, err)
		require.Equal(t, sels, got.Task.Targets)
		require.Equal(t, 3, got.Task.FanOutLimit)
		list := b.schedules(t)
		require.Equal(t, sels, list[0].Task.Targets, "the list reads them too")
		none, zero := []string{}, 0
		got, err = b.ed.UpdateSchedule(b.ctx, "one", queue.ScheduleUpdate{Targets: &none, FanOutLimit: &zero, Actor: "ann"})
		require.NoError(t, err)
		require.Empty(t, got.Task.Targets, "cleared: one task per fire again")
		run, err := b.s.RunSchedule(b.ctx, "one", "ann", nil)
		require.NoError(t, err)
		require.Empty(t, b.get(t, run.ID).Group)
	},
}

// publishTargets registers two live nodes that publish db1, db2 (tagged
// prod), db3 (prod, eu-less) and db4 (dev), as nodes' heartbeats publish them.
func (b bundle) publishTargets(t *testing.T) {
	t.Helper()
	n1 := `{"targets":[{"name":"db1","dialect":"sqlserver","tags":["prod"]},{"name":"db2","dialect":"postgres","tags":["prod","reporting"]}]}`
	n2 := `{"targets":[{"name":"db3","dialect":"sqlserver","tags":["prod"]},{"name":"db4","dialect":"sqlite","tags":["dev"]}]}`
	require.NoError(t, b.s.RegisterNode(b.ctx, queue.Node{ID: "n1", Hostname: "h1", PID: 11, Version: "v1", Info: n1}))
	require.NoError(t, b.s.RegisterNode(b.ctx, queue.Node{ID: "n2", Hostname: "h2", PID: 22, Version: "v1", Info: n2}))
}

// fireFanOut runs one look of a scheduler whose clock says now and that
// resolves targets among the live nodes'.
func (b bundle) fireFanOut(t *testing.T, now time.Time) schedule.Pass {
	t.Helper()
	sc := schedule.New(b.s, slog.New(slog.DiscardHandler), schedule.Config{Clock: func() time.Time { return now },
		Resolve: ops.FanOutResolver(b.s, time.Minute)})
	p, err := sc.FireDue(b.ctx)
	require.NoError(t, err, "firing the schedules due at %s", now)
	return p
}

// claimTarget claims task id of queue q, as a node serving its target does.
func (b bundle) claimTarget(t *testing.T, q string, id int64) *queue.Task {
	t.Helper()
	target := b.get(t, id).Target
	got, err := b.s.Claim(b.ctx, queue.ClaimParams{Queue: q, Owner: "test/" + t.Name(), Limit: 1, LeaseDuration: time.Minute,
		Targets: []string{target}})
	require.NoError(t, err)
	require.Len(t, got, 1, "claiming task %d of target %s", id, target)
	require.Equal(t, id, got[0].ID, "the one task of target %s", target)
	return got[0]
}

// schedules lists the store's schedules.
func (b bundle) schedules(t *testing.T) []queue.Schedule {
	t.Helper()
	list, err := b.s.Schedules(b.ctx)
	require.NoError(t, err)
	return list
}
