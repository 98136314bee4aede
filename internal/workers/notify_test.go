package workers

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/queue/open"
	"readpast/internal/queue/postgres"
	"readpast/internal/testenv"
)

// On PostgreSQL an enqueue made by anyone wakes the idle workers of every node
// through LISTEN/NOTIFY: with a 5 s poll and no Wake call, both nodes start a
// task within a second of the enqueue.
func TestNotifyWakesEveryNode(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testenv.New(t, testenv.Postgres))
	_, err := e.store.UpdateQueue(e.ctx, "nq", queue.QueueUpdate{Workers: intp(1), Actor: "test"})
	require.NoError(t, err)
	// Each node has a store of its own, so it listens on a connection of its
	// own; the test enqueues through a third store that no node uses.
	for _, id := range []string{"a", "b"} {
		s, err := open.Store(e.ctx, e.dsn, queue.Options{})
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		ne := e
		ne.store = s
		ne.startNode(t, Config{NodeID: id, Poll: 5 * time.Second})
	}
	require.Eventually(t, func() bool { return listeners(t, e) == 2 }, 10*time.Second, 10*time.Millisecond,
		"both nodes listen for enqueues")
	time.Sleep(300 * time.Millisecond) // both pools made their first claim and wait for the 5 s poll

	for round := 1; round <= 3; round++ {
		body := sleepBody(t, e.dialect, 500*time.Millisecond)
		enqueued := time.Now()
		ids := e.enqueue(t, queue.NewTask{Body: body, Queue: "nq"}, queue.NewTask{Body: body, Queue: "nq"})
		// workers = 1 per node: each node can take one of the two.
		for _, id := range ids {
			e.waitState(t, id, queue.StateRunning, time.Second)
		}
		var nodes []string
		for _, id := range ids {
			e.waitState(t, id, queue.StateSucceeded, 10*time.Second)
			recs, err := e.store.TaskAttempts(e.ctx, id)
			require.NoError(t, err)
			require.Len(t, recs, 1)
			nodes = append(nodes, recs[0].Node)
			latency := recs[0].StartedAt.Sub(enqueued)
			t.Logf("round %d: task %d started on node %s %s after the enqueue (poll 5 s)", round, id, recs[0].Node, latency.Round(time.Microsecond))
			require.Less(t, latency, time.Second)
		}
		slices.Sort(nodes)
		require.Equal(t, []string{"a", "b"}, nodes, "both nodes were woken")
		time.Sleep(300 * time.Millisecond) // idle again, waiting for the poll
	}
}

// listeners counts the connections listening for enqueues in e's database.
func listeners(t *testing.T, e env) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), e.dsn)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var n int
	require.NoError(t, conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = $1 AND state = 'idle' AND query <> ''`,
		postgres.ListenerApplicationName).Scan(&n))
	return n
}
