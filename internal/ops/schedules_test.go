package ops_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/ops"
	"readpast/internal/queue"
	"readpast/internal/testenv"
)

// scheduler counts how often the operations woke this node's scheduler.
type scheduler struct{ woken atomic.Int64 }

func (s *scheduler) Wake() { s.woken.Add(1) }

// The schedule operations record their actor, bound their store calls, and
// wake this node's scheduler after a change (and the queue's workers after a
// run now) so that it takes effect at once; a refusal writes nothing and
// wakes nobody.
func TestScheduleOperations(t *testing.T) {
	testenv.ForEachDialect(t, func(t *testing.T, e *testenv.Env) {
		n, sc := &node{}, &scheduler{}
		o := ops.New(ops.Deps{Store: boundedStore{Store: e.Store, t: t}, Node: n, Scheduler: sc})
		ctx := context.Background()
		def := queue.ScheduleDef{Name: "nightly", Cron: "0 1 * * *", TimeZone: "Europe/Paris",
			Task: queue.ScheduleTask{Queue: "maint", Body: "SELECT 1"}}

		s, err := o.CreateSchedule(ctx, "operator:ann", def)
		require.NoError(t, err)
		require.Equal(t, "operator:ann", s.CreatedBy)
		require.Equal(t, int64(1), sc.woken.Load(), "a create wakes the scheduler")
		_, err = o.CreateSchedule(ctx, "operator:ann", def)
		require.ErrorIs(t, err, queue.ErrExists)
		bad := def
		bad.Name, bad.Cron = "other", "0 0 30 2 *"
		_, err = o.CreateSchedule(ctx, "operator:ann", bad)
		var ve *queue.ValidationError
		require.ErrorAs(t, err, &ve)
		require.Equal(t, "cron", ve.Field)
		require.Equal(t, int64(1), sc.woken.Load(), "a refusal wakes nobody")

		up := ops.UpcomingFires(s, 5)
		require.Len(t, up, 5)
		require.True(t, up[0].Equal(s.NextFireAt), "the first upcoming fire is the stored next one")
		for _, at := range up {
			require.Equal(t, "01:00 Europe/Paris", at.Format("15:04 ")+at.Location().String(), "in the schedule's zone")
		}

		paused := true
		s, err = o.UpdateSchedule(ctx, "operator:bob", "nightly", queue.ScheduleUpdate{Paused: &paused, Actor: "ignored"})
		require.NoError(t, err)
		require.Equal(t, "operator:bob", s.UpdatedBy, "the actor is the operation's")
		require.Empty(t, ops.UpcomingFires(s, 5), "a paused schedule has no fire times")
		require.Equal(t, int64(2), sc.woken.Load())

		task, dup, err := o.RunSchedule(ctx, "operator:cy", "nightly")
		require.NoError(t, err)
		require.False(t, dup)
		require.Equal(t, "nightly", task.Schedule)
		require.Equal(t, "operator:cy", task.CreatedBy)
		require.Equal(t, int64(3), sc.woken.Load())
		require.Equal(t, "maint", n.woken[len(n.woken)-1], "a run now wakes its queue's workers")
		again, dup, err := o.RunSchedule(ctx, "operator:cy", "nightly")
		require.NoError(t, err)
		require.True(t, dup, "overlap skip: the unfinished run is returned")
		require.Equal(t, task.ID, again.ID)
		require.Equal(t, int64(3), sc.woken.Load(), "nothing was created, nobody is woken")

		times, err := o.PreviewSchedule(queue.ScheduleDef{Name: "preview", Cron: "30 2 * * *", TimeZone: "Europe/Paris",
			Paused: true, Task: queue.ScheduleTask{Body: "SELECT 1"}}, time.Date(2025, 3, 29, 12, 0, 0, 0, time.UTC), 3)
		require.NoError(t, err)
		require.Equal(t, []string{"03-30 03:00 CEST", "03-31 02:30 CEST", "04-01 02:30 CEST"},
			[]string{times[0].Format("01-02 15:04 MST"), times[1].Format("01-02 15:04 MST"), times[2].Format("01-02 15:04 MST")},
			"a preview follows the DST rules, paused or not")
		_, err = o.PreviewSchedule(queue.ScheduleDef{Name: "preview", Cron: "@daily", TimeZone: "Nowhere/Atlantis",
			Task: queue.ScheduleTask{Body: "SELECT 1"}}, time.Now(), 3)
		require.ErrorAs(t, err, &ve)
		require.Equal(t, "time_zone", ve.Field)
		small := ops.New(ops.Deps{Store: e.Store, MaxBodyBytes: 1024})
		_, err = small.PreviewSchedule(queue.ScheduleDef{Name: "preview", Cron: "@daily",
			Task: queue.ScheduleTask{Body: strings.Repeat("x", 2000)}}, time.Now(), 3)
		require.ErrorAs(t, err, &ve)
		require.Equal(t, "body", ve.Field, "a preview checks the body against the store's limit")
		require.Contains(t, ve.Reason, "over the limit of 1024 bytes")
		_, err = small.CreateSchedule(ctx, "operator:ann", queue.ScheduleDef{Name: "big", Cron: "@daily",
			Task: queue.ScheduleTask{Body: strings.Repeat("x", 2000)}})
		require.ErrorAs(t, err, &ve)
		require.Equal(t, "body", ve.Field, "a create checks the body against the store's limit before the store writes")
		ss, err := e.Store.Schedules(e.Ctx)
		require.NoError(t, err)
		require.Len(t, ss, 1, "neither a preview nor a refused create writes anything")

		require.NoError(t, o.DeleteSchedule(ctx, "operator:dee", "nightly"))
		require.ErrorIs(t, o.DeleteSchedule(ctx, "operator:dee", "nightly"), queue.ErrNotFound)
		_, _, err = o.RunSchedule(ctx, "operator:cy", "nightly")
		require.ErrorIs(t, err, queue.ErrNotFound)
	})
}
