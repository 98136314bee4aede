package sqlserver

import (
	"database/sql"
	"testing"
	"time"

	"readpast/internal/queue"
)

// scheduleBoundQueries are the schedule batches with the arguments their Go
// callers bind, for the offline checks of sql_test.go (allBoundQueries).
func scheduleBoundQueries(t *testing.T) []boundQuery {
	t.Helper()
	prio := 5
	def := queue.ScheduleDef{Name: "nightly", Cron: "0 1 * * *", TimeZone: "Europe/Paris", Overlap: queue.OverlapSkip,
		Misfire: queue.MisfireRunOnce, Task: queue.ScheduleTask{Queue: "maint", Body: "SELECT 1", Priority: &prio, MaxAttempts: 3}}
	r := queue.ScheduleRun{ID: 7, Name: "nightly"}
	return []boundQuery{
		{schedulesQuery, []any{sql.Named("name", nullString(""))}},
		{createScheduleBatch, createScheduleArgs(queue.NewSchedule{Def: def, NextFireAt: time.Now(), Actor: "ann"})},
		{replaceScheduleBatch, replaceScheduleArgs(queue.ScheduleReplace{ID: 7, Version: 3, Name: "nightly", Def: def,
			Actor: "ann", Action: "pause_schedule", Detail: "paused=true"})},
		{deleteScheduleBatch, []any{sql.Named("name", "nightly"), sql.Named("actor", "ann")}},
		{runLockQuery, []any{sql.Named("name", "nightly")}},
		{fireBatch, fireArgs(queue.ScheduleFire{ID: 7, Version: 3, FireAt: time.Now(), Next: time.Now().Add(time.Hour)})},
		{linkRunBatch, linkRunArgs(r, 42, time.Time{})},
		{runAuditBatch, runAuditArgs("ann", "nightly", 42)},
		{fanOutGroupBatch, fanOutGroupArgs(&queue.FanOutFire{Group: "fanout-x", Limit: 2}, "schedule:nightly")},
		{linkFanOutBatch, linkFanOutArgs(r, 42, time.Time{}, "fanout-x")},
		{dueSchedulesQuery, dueArgs(time.Time{}, 100)},
	}
}

// TestScheduleQueriesBindTypedParameters: a NULL goes to the server with its
// type (an untyped nil reaches it as a NULL of no type, which SQL Server must
// guess), so no argument of a schedule batch is a bare nil.
func TestScheduleQueriesBindTypedParameters(t *testing.T) {
	for _, bq := range scheduleBoundQueries(t) {
		for _, a := range bq.args {
			if na := a.(sql.NamedArg); na.Value == nil {
				t.Errorf("%s: @%s is bound to an untyped nil", bq.q.name, na.Name)
			}
		}
	}
}
