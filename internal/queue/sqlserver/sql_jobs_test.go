package sqlserver

import (
	"database/sql"
	"testing"
	"time"

	"readpast/internal/queue"
)

// jobBoundQueries are the jobs' batches with the arguments their Go callers
// build, for the offline checks of every batch (sql_test.go).
func jobBoundQueries(t *testing.T) []boundQuery {
	t.Helper()
	def, err := jobDefArgs(queue.NewJob{Name: "j", Queue: "q", Overlap: queue.OverlapSkip, Definition: "{}", Actor: "ann",
		Steps: []queue.PlanStep{{Name: "a", Body: "SELECT 1", MaxAttempts: 1, OnSuccess: queue.StepQuitSuccess, OnFailure: queue.StepQuitFailure}}})
	if err != nil {
		t.Fatal(err)
	}
	return []boundQuery{
		{createJobBatch, def},
		{replaceJobBatch, def},
		{jobsQuery, []any{sql.Named("name", nullString("j"))}},
		{jobStepsQuery, []any{sql.Named("job_id", int64(1))}},
		{deleteJobBatch, deleteJobArgs("j", "ann")},
		{startRunBatch, startRunArgs(queue.StartRun{Job: "j", Trigger: queue.TriggerRunNow, Actor: "ann"})},
		{cancelRunBatch, cancelRunArgs(1, "ann")},
		{runQuery, []any{sql.Named("run_id", int64(1))}},
		{runStepsQuery, []any{sql.Named("run_id", int64(1))}},
		{runsQuery, runsArgs("j", 10, 50)},
		{purgeRunsBatch, purgeRunsArgs(time.Now(), 100)},
	}
}
