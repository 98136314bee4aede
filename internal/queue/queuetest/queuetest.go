// Package queuetest is the conformance suite every queue.Store dialect must
// pass. Each dialect's test file calls Exercise with a Harness that opens a
// fresh store on an empty database; a behaviour is added by extending this
// suite, never by a dialect-only test.
package queuetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/schedule"
	"readpast/internal/testenv"
)

// Harness is the dialect the suite runs on: every test gets a fresh database
// of it from testenv, and reaches the database only through the store, except
// for setup the store's API cannot express (Exec).
type Harness struct {
	Dialect testenv.Dialect
}

// NewStore returns an unmigrated store on a fresh, empty database, closed when
// t ends.
func (h Harness) NewStore(t *testing.T) (queue.Store, string) {
	t.Helper()
	dsn := testenv.NewDSN(t, h.Dialect)
	return testenv.OpenStore(t, dsn, queue.Options{}), dsn
}

// Exercise runs every conformance test on h's dialect.
func Exercise(t *testing.T, h Harness) {
	groups := []struct {
		name  string
		tests map[string]func(*testing.T, Harness)
	}{
		{"schema", schemaTests},
		{"enqueue", enqueueTests},
		{"unique", uniqueTests},
		{"claim", claimTests},
		{"concurrency", concurrencyTests},
		{"cutoff", cutoffTests},
		{"nonblocking", nonBlockingTests},
		{"groups", groupTests},
		{"backlog", backlogTests},
		{"chains", chainTests},
		{"leases", leaseTests},
		{"finish", finishTests},
		{"cancel", cancelTests},
		{"agreement", agreementTests},
		{"transactional", transactionalTests},
		{"reads", readTests},
		{"settings", settingsTests},
		{"nodes", nodeTests},
		{"logs", logTests},
		{"rollups", rollupTests},
		{"schedules", scheduleTests},
		{"schedule_writes", scheduleWriteTests},
		{"schedule_fanout", scheduleFanOutTests},
		{"checks", checkTests},
		{"audit", auditTests},
		{"manage", manageTests},
		{"targets", targetTests},
		{"target_backlog", targetBacklogTests},
		{"jobs", jobTests},
		{"job_fanout", jobFanOutTests},
		{"job_schedules", jobScheduleTests},
		{"retry_policy", retryPolicyTests},
		{"alerts", alertTests},
		{"alert_reads", alertReadTests},
		{"alert_concurrency", alertConcurrencyTests},
		{"bulk", bulkTests},
		{"results", resultTests},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for name, fn := range g.tests {
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					fn(t, h)
				})
			}
		})
	}
}

// bundle is what most tests start from: a migrated store and a context.
type bundle struct {
	ctx context.Context
	s   queue.Store
	// ed changes the store's schedules as operators do: through the
	// schedule package, which checks what the store then writes.
	ed  schedule.Editor
	env *testenv.Env
}

func setup(t *testing.T, h Harness) bundle {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	s, dsn := h.NewStore(t)
	require.NoError(t, s.Migrate(ctx), "migrating a fresh database")
	return bundle{ctx: ctx, s: s, ed: schedule.Editor{Store: s}, env: &testenv.Env{Ctx: ctx, Dialect: h.Dialect, DSN: dsn, Store: s}}
}

func intp(v int) *int { return &v }

// past is an available_at safely before the database clock's now.
func past(d time.Duration) time.Time { return time.Now().Add(-time.Hour - d) }

// enqueue writes tasks and fails the test on error.
func (b bundle) enqueue(t *testing.T, tasks ...queue.NewTask) []int64 {
	t.Helper()
	res, err := b.s.Enqueue(b.ctx, tasks)
	require.NoError(t, err, "enqueueing %d tasks", len(tasks))
	require.Len(t, res, len(tasks))
	return queue.IDs(res)
}

// claim claims up to n tasks of queue q with a 1-minute lease.
func (b bundle) claim(t *testing.T, q string, n int) []*queue.Task {
	t.Helper()
	got, err := b.s.Claim(b.ctx, queue.ClaimParams{Queue: q, Owner: "test/" + t.Name(), Limit: n, LeaseDuration: time.Minute})
	require.NoError(t, err, "claiming %d from %s", n, q)
	return got
}

// finish ends one claimed task with the outcome and fails the test on error.
func (b bundle) finish(t *testing.T, task *queue.Task, o queue.Outcome, errText string) queue.FinishResult {
	t.Helper()
	res, err := b.s.Finish(b.ctx, []queue.Attempt{attempt(task, o, errText)})
	require.NoError(t, err, "finishing task %d as %s", task.ID, o)
	require.Len(t, res, 1)
	require.NoError(t, res[0].Err, "finishing task %d as %s", task.ID, o)
	return res[0]
}

func attempt(task *queue.Task, o queue.Outcome, errText string) queue.Attempt {
	now := time.Now()
	return queue.Attempt{Lease: task.Lease(), Outcome: o, Error: errText, Node: "node-t", Worker: "w1",
		SessionID: "42", StartedAt: now.Add(-10 * time.Millisecond), FinishedAt: now, RowsAffected: 1}
}

func (b bundle) get(t *testing.T, id int64) *queue.Task {
	t.Helper()
	task, err := b.s.Get(b.ctx, id)
	require.NoError(t, err, "getting task %d", id)
	return task
}

func ids(tasks []*queue.Task) []int64 {
	out := make([]int64, len(tasks))
	for i, t := range tasks {
		out[i] = t.ID
	}
	return out
}
