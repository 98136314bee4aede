package chaos

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/testpg"
)

// PostgreSQL faults under running nodes: every round either terminates every
// backend of the database (pg_terminate_backend: the nodes' store, target and
// LISTEN connections, mid-claim, mid-body and mid-finish) or stops the server
// and starts it again. The nodes survive without a restart, and nothing is
// lost: every task succeeds with exactly one succeeded attempt, each
// transactional effect commits exactly once, and an ordinary task's effect
// repeats only as often as it has attempts that failed or were lost. The
// server is private: stopping the shared one would break the tests beside.
func TestPostgresFaults(t *testing.T) {
	t.Parallel()
	long := longRun(t, chaosEnv)
	srv := testpg.Private(t)
	dsn := srv.NewDatabase(t)
	w := newWorkload(t, newPostgres(t, dsn), "faults")
	const lease = 3 * time.Second
	dir := t.TempDir()
	nodes := make([]*node, 3)
	for i := range nodes {
		name := fmt.Sprintf("n%d", i)
		nodes[i] = startNode(t, dir, name, nodeArgs(dsn, name, "--workers", "8", "--lease", lease.String(), "--grace", "2s", "--poll", "50ms"))
	}
	wave := shape{tx: 80, txSleep: [2]time.Duration{100 * time.Millisecond, 500 * time.Millisecond},
		ordinary: 120, ordinarySleep: [2]time.Duration{100 * time.Millisecond, 600 * time.Millisecond}}

	began := time.Now()
	w.enqueue(t, wave)
	// The short run: three rounds of backend kills, then a restart; a long
	// run repeats the four for its duration.
	terminated, restarts := 0, 0
	for round := 1; round <= 4 || time.Since(began) < long; round++ {
		time.Sleep(1500 * time.Millisecond)
		if round%4 == 0 {
			require.NoError(t, srv.Stop())
			time.Sleep(2 * time.Second)
			require.NoError(t, srv.Start())
			restarts++
		} else {
			terminated += terminateBackends(t, dsn)
		}
		if left, ok := w.unfinished(); ok && time.Since(began) < long && left < int64(wave.size()/2) {
			w.enqueue(t, wave)
		}
	}
	faultsEnded := time.Now()
	deadline := faultsEnded.Add(5 * time.Minute)
	for {
		left, ok := w.unfinished()
		if ok && left == 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "%d tasks still unfinished %s after the last fault", left, time.Since(faultsEnded).Round(time.Second))
		time.Sleep(200 * time.Millisecond)
	}
	settled := time.Since(faultsEnded)

	for _, n := range nodes {
		require.True(t, n.running(), "node %s survived every fault without a restart", n.name)
	}
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		listed, err := w.Store.Nodes(ctx, lease)
		if err != nil || len(listed) != len(nodes) {
			return false
		}
		for _, n := range listed {
			if n.Gone {
				return false
			}
		}
		return true
	}, 30*time.Second, 100*time.Millisecond, "every node heartbeats again")
	for _, n := range nodes {
		n.stop(t, 30*time.Second)
	}
	c := w.verify(t, queue.OutcomeSucceeded, queue.OutcomeFailed, queue.OutcomeLost)
	t.Logf("%d backends terminated and %d server restarts in %s; every task ended %s after the last fault: %s",
		terminated, restarts, faultsEnded.Sub(began).Round(time.Millisecond), settled.Round(time.Millisecond), c)
	require.Positive(t, terminated, "backends were terminated")
}

// terminateBackends ends every other session of the database and says how many.
func terminateBackends(t *testing.T, dsn string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var n int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid()) k`).Scan(&n))
	return n
}
