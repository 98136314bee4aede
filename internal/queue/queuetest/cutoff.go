package queuetest

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/testenv"
)

// Store writes are not cut in half: a claim whose caller's context ends while
// it runs (a node's SIGTERM) either claims nothing or returns every task it
// claimed, so no task is leased to a caller that never heard of it (it would
// come back as a lost attempt), and no transaction is left open on a pooled
// session.
var cutoffTests = map[string]func(*testing.T, Harness){
	"claims_cut_off_by_their_caller_leave_nothing_half_done": func(t *testing.T, h Harness) {
		b := setup(t, h)
		const total = 300
		tasks := make([]queue.NewTask, total)
		for i := range tasks {
			tasks[i] = queue.NewTask{Body: "SELECT 1", Queue: "cut"}
		}
		b.enqueue(t, tasks...)
		rng := rand.New(rand.NewPCG(7, 9))
		returned := 0
		for i := 0; i < 200; i++ {
			ctx, cancel := context.WithCancel(b.ctx)
			time.AfterFunc(time.Duration(rng.IntN(3000))*time.Microsecond, cancel)
			got, err := b.s.Claim(ctx, queue.ClaimParams{Queue: "cut", Owner: "cut/w", Limit: 1 + rng.IntN(5), LeaseDuration: time.Minute})
			cancel()
			if err != nil {
				require.ErrorIs(t, err, context.Canceled, "a claim may fail only by its own context, before it was sent")
				continue
			}
			returned += len(got)
			if len(got) > 0 {
				attempts := make([]queue.Attempt, len(got))
				for j, task := range got {
					attempts[j] = attempt(task, queue.OutcomeCancelled, "released")
				}
				res, err := b.s.Release(b.ctx, attempts)
				require.NoError(t, err)
				for _, r := range res {
					require.NoError(t, r.Err)
				}
			}
		}
		t.Logf("200 claims under contexts cut off after 0-3 ms returned %d tasks", returned)
		counts := queueCounts(t, b, "cut")
		require.Zero(t, counts[queue.StateRunning], "every claimed task reached its caller, who released it")
		require.Equal(t, int64(total), counts[queue.StatePending])
		lost, err := b.s.Attempts(b.ctx, queue.LogQuery{Queue: "cut", Outcome: queue.OutcomeLost})
		require.NoError(t, err)
		require.Empty(t, lost)
		if q := openTransactionsQuery(h.Dialect); q != "" {
			require.Eventually(t, func() bool { return b.env.QueryInt(t, q) == 0 }, 5*time.Second, 50*time.Millisecond,
				"no session of the store's database is left inside a transaction")
		}
	},
}

// openTransactionsQuery counts the other sessions of the current database that
// are inside a transaction, or is "" where the dialect has no such sessions.
func openTransactionsQuery(d testenv.Dialect) string {
	switch d {
	case testenv.Postgres:
		return `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND state LIKE 'idle in transaction%'`
	case testenv.SQLServer:
		return `SELECT COUNT(*) FROM sys.dm_exec_sessions
			WHERE database_id = DB_ID() AND session_id <> @@SPID AND open_transaction_count > 0`
	}
	return ""
}
