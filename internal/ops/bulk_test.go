package ops_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/ops"
	"readpast/internal/queue"
	"readpast/internal/testenv"
)

// runBulks runs o's bulk runner as owner until the test ends.
func runBulks(t *testing.T, o *ops.Ops, owner string) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); o.RunBulks(ctx, owner, nil) }()
	t.Cleanup(func() { cancel(); <-done })
}

// waitBulk waits until the bulk operation has ended and returns it.
func waitBulk(t *testing.T, e *testenv.Env, id int64) *queue.BulkOp {
	t.Helper()
	var op *queue.BulkOp
	require.Eventually(t, func() bool {
		var err error
		op, err = e.Store.GetBulk(e.Ctx, id)
		require.NoError(t, err)
		return op.Finished()
	}, time.Minute, 50*time.Millisecond, "bulk operation %d ends", id)
	return op
}

// A bulk cancel by filter cancels every pending task of the filter, in more
// than one batch, asks the running one to stop (here, where it runs), leaves
// other queues alone, and audits the request and its end with the counts.
func TestBulkCancelByFilter(t *testing.T) {
	testenv.ForEachDialect(t, func(t *testing.T, e *testenv.Env) {
		n := &node{}
		o := ops.New(ops.Deps{Store: e.Store, Node: n})
		var tasks []queue.NewTask
		for i := range 2*ops.BulkBatch + 30 {
			tasks = append(tasks, queue.NewTask{Queue: "bulk", Body: fmt.Sprintf("SELECT %d", i)})
		}
		_, err := e.Store.Enqueue(e.Ctx, append(tasks, queue.NewTask{Queue: "other", Body: "SELECT 1"}))
		require.NoError(t, err)
		running, err := e.Store.Claim(e.Ctx, queue.ClaimParams{Queue: "bulk", Owner: "n/bulk", Limit: 1, LeaseDuration: time.Minute})
		require.NoError(t, err)
		require.Len(t, running, 1)

		n0, more, err := o.CountMatching(e.Ctx, queue.TaskFilter{Queue: "bulk"})
		require.NoError(t, err)
		require.Equal(t, int64(len(tasks)), n0)
		require.False(t, more)
		op, err := o.StartBulk(e.Ctx, "operator:ann", queue.BulkCancel, queue.BulkSelection{Filter: &queue.TaskFilter{Queue: "bulk"}})
		require.NoError(t, err)
		require.Equal(t, int64(len(tasks)), op.Matched)
		runBulks(t, o, "node-a")
		op = waitBulk(t, e, op.ID)
		require.Equal(t, int64(len(tasks)), op.Done, "every task of the filter, the running one asked to stop")
		require.Zero(t, op.Skipped)
		require.Empty(t, op.Error)

		left, err := e.Store.CountTasks(e.Ctx, queue.ListParams{Queue: "bulk", State: queue.StatePending}, 1000)
		require.NoError(t, err)
		require.Zero(t, left)
		got, err := e.Store.Get(e.Ctx, running[0].ID)
		require.NoError(t, err)
		require.True(t, got.CancelRequested)
		require.Equal(t, []int64{running[0].ID}, n.cancelled, "the running task is stopped where it runs")
		other, err := e.Store.CountTasks(e.Ctx, queue.ListParams{Queue: "other", State: queue.StatePending}, 1000)
		require.NoError(t, err)
		require.Equal(t, int64(1), other, "another queue is left alone")

		rows, err := e.Store.Audit(e.Ctx, queue.AuditQuery{Limit: 1})
		require.NoError(t, err)
		require.Equal(t, "bulk_cancel_done", rows[0].Action)
		require.Equal(t, fmt.Sprintf("done %d, skipped 0", len(tasks)), rows[0].Detail)
	})
}

// A node that stops in the middle of a bulk operation (its lease runs out
// after a batch) leaves it to another, which goes on from the last batch's
// cursor: every task is changed once, none twice, and the counts add up.
func TestBulkResumesAfterANodeStops(t *testing.T) {
	testenv.ForEachDialect(t, func(t *testing.T, e *testenv.Env) {
		o := ops.New(ops.Deps{Store: e.Store})
		var tasks []queue.NewTask
		for i := range ops.BulkBatch + 50 {
			tasks = append(tasks, queue.NewTask{Queue: "resume", Body: fmt.Sprintf("SELECT %d", i)})
		}
		res, err := e.Store.Enqueue(e.Ctx, tasks)
		require.NoError(t, err)
		ids := queue.IDs(res)
		op, err := o.StartBulk(e.Ctx, "operator:ann", queue.BulkCancel, queue.BulkSelection{Filter: &queue.TaskFilter{Queue: "resume"}})
		require.NoError(t, err)

		// The first node claims it, cancels the newest 30 and records that
		// batch, then stops without a word.
		dead, err := e.Store.ClaimBulk(e.Ctx, "node-dead", 300*time.Millisecond)
		require.NoError(t, err)
		require.Equal(t, op.ID, dead.ID)
		for _, id := range ids[len(ids)-30:] {
			_, err := e.Store.Cancel(e.Ctx, id, "operator:ann")
			require.NoError(t, err)
		}
		require.NoError(t, e.Store.AdvanceBulk(e.Ctx, queue.BulkAdvance{ID: op.ID, Token: dead.LeaseToken, Cursor: ids[len(ids)-30],
			Done: 30, Lease: 300 * time.Millisecond}))

		runBulks(t, o, "node-b")
		op = waitBulk(t, e, op.ID)
		require.Equal(t, int64(len(ids)), op.Done, "the rest was done by the node that took over")
		require.Zero(t, op.Skipped, "nothing was done twice")
		require.Equal(t, "node-b", op.LeaseOwner)
		left, err := e.Store.CountTasks(e.Ctx, queue.ListParams{Queue: "resume", State: queue.StatePending}, 1000)
		require.NoError(t, err)
		require.Zero(t, left)
	})
}

// Retry by ids puts failed tasks back and skips those it does not apply to;
// delete by filter removes the finished tasks of a state with their log rows.
// Tasks enqueued after the request are not in it.
func TestBulkRetryByIDsAndDeleteByFilter(t *testing.T) {
	testenv.ForEachDialect(t, func(t *testing.T, e *testenv.Env) {
		o := ops.New(ops.Deps{Store: e.Store, Node: &node{}})
		runBulks(t, o, "node-a")
		var tasks []queue.NewTask
		for i := range 6 {
			tasks = append(tasks, queue.NewTask{Queue: "rd", Body: fmt.Sprintf("SELECT %d", i), MaxAttempts: 1})
		}
		res, err := e.Store.Enqueue(e.Ctx, tasks)
		require.NoError(t, err)
		claimed, err := e.Store.Claim(e.Ctx, queue.ClaimParams{Queue: "rd", Owner: "n/rd", Limit: 4, LeaseDuration: time.Minute})
		require.NoError(t, err)
		require.Len(t, claimed, 4)
		var attempts []queue.Attempt
		for _, c := range claimed {
			attempts = append(attempts, queue.Attempt{Lease: c.Lease(), Outcome: queue.OutcomeFailed, Error: "boom",
				StartedAt: time.Now(), FinishedAt: time.Now()})
		}
		_, err = e.Store.Finish(e.Ctx, attempts)
		require.NoError(t, err)

		pending := res[len(res)-1].ID // claim order is id order: the last two are pending
		op, err := o.StartBulk(e.Ctx, "operator:bob", queue.BulkRetry, queue.BulkSelection{IDs: []int64{claimed[0].ID, claimed[1].ID, claimed[1].ID, pending}})
		require.NoError(t, err)
		op = waitBulk(t, e, op.ID)
		require.Equal(t, [2]int64{2, 1}, [2]int64{op.Done, op.Skipped}, "two retried; the pending one skipped; a repeated id once")
		for _, c := range claimed[:2] {
			got, err := e.Store.Get(e.Ctx, c.ID)
			require.NoError(t, err)
			require.Equal(t, queue.StatePending, got.State)
		}

		op, err = o.StartBulk(e.Ctx, "operator:bob", queue.BulkDelete, queue.BulkSelection{Filter: &queue.TaskFilter{Queue: "rd", State: queue.StateFailed}})
		require.NoError(t, err)
		require.Equal(t, int64(2), op.Matched)
		later, err := e.Store.Enqueue(e.Ctx, []queue.NewTask{{Queue: "rd", Body: "SELECT 9"}})
		require.NoError(t, err)
		op = waitBulk(t, e, op.ID)
		require.Equal(t, [2]int64{2, 0}, [2]int64{op.Done, op.Skipped})
		for _, c := range claimed[2:] {
			_, err := e.Store.Get(e.Ctx, c.ID)
			require.ErrorIs(t, err, queue.ErrNotFound)
			recs, err := e.Store.TaskAttempts(e.Ctx, c.ID)
			require.NoError(t, err)
			require.Empty(t, recs)
		}
		_, err = e.Store.Get(e.Ctx, later[0].ID)
		require.NoError(t, err, "a task enqueued after the request is not in it")

		_, err = o.StartBulk(e.Ctx, "operator:bob", queue.BulkDelete, queue.BulkSelection{})
		require.True(t, queue.IsValidation(err), "%v", err)
	})
}
