package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
)

// A finish locks its tasks in id order whatever the order of its attempts, as
// every writer of several task rows does (the schema baseline, "Lock order"): a
// heartbeat of the same node locks them in that order too, and two writers
// that lock in different orders can deadlock. The finish's one UPDATE takes
// its locks as its join reads the tasks (migrations/*/000001_baseline). Here the attempts
// come in descending id order, the lowest id's row is last in the table, and
// another transaction holds the highest id: a finish in id order holds the
// lowest one while it waits; one that locked in the attempts' order, or in
// the table's, would wait without it.
func TestFinishLocksTasksInIDOrder(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := migratedStore(t, ctx)
	_, err := checked(s).Enqueue(ctx, []queue.NewTask{{Queue: "order", Body: "SELECT 1"}, {Queue: "order", Body: "SELECT 1"}, {Queue: "order", Body: "SELECT 1"}})
	require.NoError(t, err)
	claimed, err := checked(s).Claim(ctx, queue.ClaimParams{Queue: "order", Owner: "n1/w1", Limit: 3, LeaseDuration: time.Minute})
	require.NoError(t, err)
	require.Len(t, claimed, 3)
	lowest, highest := claimed[0].ID, claimed[2].ID
	require.Less(t, lowest, highest)
	// The lowest id's row version goes last in the table, so that reading the
	// table in its physical order is not id order either.
	_, err = s.pool.Exec(ctx, `UPDATE readpast_tasks SET body = body WHERE id = $1`, lowest)
	require.NoError(t, err)

	holder, err := s.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = holder.Rollback(context.Background()) }()
	_, err = holder.Exec(ctx, `SELECT id FROM readpast_tasks WHERE id = $1 FOR UPDATE`, highest)
	require.NoError(t, err)

	type finished struct {
		res []queue.FinishResult
		err error
	}
	done := make(chan finished, 1)
	go func() {
		var attempts []queue.Attempt
		for i := len(claimed) - 1; i >= 0; i-- {
			attempts = append(attempts, queue.Attempt{Lease: claimed[i].Lease(), Outcome: queue.OutcomeSucceeded,
				StartedAt: time.Now(), FinishedAt: time.Now()})
		}
		res, err := checked(s).Finish(ctx, attempts)
		done <- finished{res, err}
	}()

	require.Eventually(t, func() bool { return finishesWaiting(ctx, s) >= 1 }, 30*time.Second, 10*time.Millisecond,
		"the finish never waited for the task another transaction holds")

	probe, err := s.pool.Begin(ctx)
	require.NoError(t, err)
	_, err = probe.Exec(ctx, `SELECT id FROM readpast_tasks WHERE id = $1 FOR UPDATE NOWAIT`, lowest)
	_ = probe.Rollback(ctx)
	var pgErr *pgconn.PgError
	require.True(t, errors.As(err, &pgErr) && pgErr.Code == "55P03",
		"while it waits for task %d, the finish must already hold task %d (locks in id order); locking it gave %v", highest, lowest, err)

	require.NoError(t, holder.Rollback(ctx))
	got := <-done
	require.NoError(t, got.err)
	for _, r := range got.res {
		require.NoError(t, r.Err)
		require.Equal(t, queue.StateSucceeded, r.State)
	}
}

// Two finishes at once never deadlock on the finished counts: each
// transaction updates readpast_counts once, its rows in key order (migration
// 000005). A finish of a chain task that fails for good cancels the rest of its
// chain and counts those too; when it counted its own ended tasks first and
// the cancelled ones later, it took (q, failed) before (q, cancelled), while
// a finish of a cancelled and a failed task took them the other way round,
// and the server broke the cycle by failing one of them (found in review). Here the chain's
// next task is held by another transaction, so the chain's finish waits
// inside its rules while the other finish runs.
func TestFinishesCountOnceAndDoNotDeadlock(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := migratedStore(t, ctx)
	enq, err := checked(s).Enqueue(ctx, []queue.NewTask{
		{Queue: "q", Body: "SELECT 1", Chain: "c", Stage: 1, MaxAttempts: 1},
		{Queue: "q", Body: "SELECT 1", Chain: "c", Stage: 2},
		{Queue: "q", Body: "SELECT 1", MaxAttempts: 1},
		{Queue: "q", Body: "SELECT 1", MaxAttempts: 1},
	})
	require.NoError(t, err)
	ids := queue.IDs(enq)
	claimed, err := checked(s).Claim(ctx, queue.ClaimParams{Queue: "q", Owner: "n1/w1", Limit: 10, LeaseDuration: time.Minute})
	require.NoError(t, err)
	require.Len(t, claimed, 3, "the chain's first stage and the two plain tasks")
	byID := map[int64]*queue.Task{}
	for _, c := range claimed {
		byID[c.ID] = c
	}
	end := func(id int64, o queue.Outcome) queue.Attempt {
		return queue.Attempt{Lease: byID[id].Lease(), Outcome: o, Error: "boom", StartedAt: time.Now(), FinishedAt: time.Now()}
	}

	holder, err := s.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = holder.Rollback(context.Background()) }()
	_, err = holder.Exec(ctx, `SELECT id FROM readpast_tasks WHERE id = $1 FOR UPDATE`, ids[1])
	require.NoError(t, err)

	errs := make(chan error, 2)
	finish := func(attempts ...queue.Attempt) {
		res, err := checked(s).Finish(ctx, attempts)
		for _, r := range res {
			if err == nil {
				err = r.Err
			}
		}
		errs <- err
	}
	go finish(end(ids[0], queue.OutcomeFailed))
	require.Eventually(t, func() bool { return finishesWaiting(ctx, s) >= 1 }, 30*time.Second, 10*time.Millisecond,
		"the chain's finish never waited for its next task")
	// Its attempts' outcomes are not the chain's (failed), so their throughput
	// rollup rows are other rows; a timed-out last attempt leaves its task
	// failed.
	go finish(end(ids[2], queue.OutcomeCancelled), end(ids[3], queue.OutcomeTimedOut))
	// The other finish either ends, or waits behind the chain's finish.
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, holder.Rollback(ctx))
	for range 2 {
		require.NoError(t, <-errs, "a finish failed (a deadlock between the two)")
	}
	counts := map[string]int64{}
	rows, err := s.pool.Query(ctx, `SELECT state, n FROM readpast_counts WHERE queue = 'q'`)
	require.NoError(t, err)
	for rows.Next() {
		var st string
		var n int64
		require.NoError(t, rows.Scan(&st, &n))
		counts[st] = n
	}
	require.NoError(t, rows.Err())
	require.Equal(t, map[string]int64{"failed": 2, "cancelled": 2}, counts, "each ended task counted once")
}

// finishesWaiting counts the finishes of s's database that wait for a lock
// now (-1 when it cannot be read).
func finishesWaiting(ctx context.Context, s *Store) int {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%readpast_end_attempts%'`).Scan(&n); err != nil {
		return -1
	}
	return n
}
