package queuetest

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
)

// What a store does with the schedule values it is given. The rules (a
// definition's checks and defaults, its next fire time, the actor) are the
// schedule package's: a store writes what it gets, only at the version read,
// and a change the editor refuses reaches no store.
var scheduleWriteTests = map[string]func(*testing.T, Harness){
	"create_writes_the_values_given": func(t *testing.T, h Harness) {
		b := setup(t, h)
		prio, next := 7, time.Date(2031, 5, 4, 3, 2, 1, 0, time.UTC)
		def := queue.ScheduleDef{Name: "given", Cron: "1 2 3 4 *", TimeZone: "Asia/Tokyo", Overlap: queue.OverlapAllow,
			Misfire: queue.MisfireSkip, Task: queue.ScheduleTask{Queue: "q", Body: "SELECT 7", Priority: &prio,
				Group: "g", MaxAttempts: 4, Timeout: 1500 * time.Millisecond, Transactional: true}}
		require.NoError(t, b.s.CreateSchedule(b.ctx, queue.NewSchedule{Def: def, NextFireAt: next, Actor: "ann"}))
		got, err := b.s.GetSchedule(b.ctx, "given")
		require.NoError(t, err)
		require.Equal(t, def, got.ScheduleDef, "the definition is stored as given")
		require.True(t, next.Equal(got.NextFireAt), "the next fire time is stored as given: %s, not %s", next, got.NextFireAt)
		require.Equal(t, "ann", got.CreatedBy)
		require.Equal(t, int64(1), b.env.QueryInt(t, "SELECT count(*) FROM readpast_audit WHERE action = 'create_schedule' AND actor = 'ann' AND target = 'schedule given'"))
		err = b.s.CreateSchedule(b.ctx, queue.NewSchedule{Def: def, NextFireAt: next, Actor: "bob"})
		require.ErrorIs(t, err, queue.ErrExists)
	},
	"replace_writes_only_at_the_version_read": func(t *testing.T, h Harness) {
		b := setup(t, h)
		s := b.createSchedule(t, queue.ScheduleDef{Name: "v", Cron: "0 1 * * *", Task: queue.ScheduleTask{Body: "SELECT 1"}})
		def := s.ScheduleDef
		def.Task.Body = "SELECT 2"
		r := queue.ScheduleReplace{ID: s.ID, Version: s.Version + 1, Name: s.Name, Def: def, NextFireAt: s.NextFireAt.Add(time.Hour),
			Actor: "bob", Action: "update_schedule", Detail: "body=8 bytes"}
		ok, err := b.s.ReplaceSchedule(b.ctx, r)
		require.NoError(t, err)
		require.False(t, ok, "a version other than the stored one writes nothing")
		got, err := b.s.GetSchedule(b.ctx, "v")
		require.NoError(t, err)
		require.Equal(t, "SELECT 1", got.Task.Body)
		require.Zero(t, b.env.QueryInt(t, "SELECT count(*) FROM readpast_audit WHERE action = 'update_schedule'"))

		r.Version = s.Version
		ok, err = b.s.ReplaceSchedule(b.ctx, r)
		require.NoError(t, err)
		require.True(t, ok)
		got, err = b.s.GetSchedule(b.ctx, "v")
		require.NoError(t, err)
		require.Equal(t, def, got.ScheduleDef)
		require.True(t, r.NextFireAt.Equal(got.NextFireAt), "the next fire time is stored as given")
		require.Greater(t, got.Version, s.Version)
		require.Equal(t, "bob", got.UpdatedBy)
		require.Equal(t, int64(1), b.env.QueryInt(t, "SELECT count(*) FROM readpast_audit WHERE action = 'update_schedule' AND actor = 'bob' AND detail = 'body=8 bytes'"))
	},
	"refused_actor_reaches_no_store": func(t *testing.T, h Harness) {
		b := setup(t, h)
		b.createSchedule(t, queue.ScheduleDef{Name: "a", Cron: "0 1 * * *", Task: queue.ScheduleTask{Body: "SELECT 1"}})
		long := strings.Repeat("x", queue.MaxNameLength+1)
		body := "SELECT 2"
		for op, call := range map[string]func() error{
			"create": func() error {
				_, err := b.ed.CreateSchedule(b.ctx, queue.ScheduleDef{Name: "b", Cron: "@daily", Task: queue.ScheduleTask{Body: "SELECT 1"}}, long)
				return err
			},
			"update": func() error {
				_, err := b.ed.UpdateSchedule(b.ctx, "a", queue.ScheduleUpdate{Body: &body, Actor: long})
				return err
			},
			"delete": func() error { return b.ed.DeleteSchedule(b.ctx, "a", long) },
			"run": func() error {
				_, err := b.ed.RunSchedule(b.ctx, "a", long)
				return err
			},
		} {
			var ve *queue.ValidationError
			require.ErrorAs(t, call(), &ve, op)
			require.Equal(t, "actor", ve.Field, op)
		}
		all, err := b.s.Schedules(b.ctx)
		require.NoError(t, err)
		require.Len(t, all, 1, "nothing was created or deleted")
		require.Equal(t, "SELECT 1", all[0].Task.Body, "nothing was changed")
		require.Zero(t, all[0].LastTaskID, "nothing was run")
		require.Equal(t, int64(1), b.env.QueryInt(t, "SELECT count(*) FROM readpast_audit"), "only the create of the setup is audited")
	},
}
