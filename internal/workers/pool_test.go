package workers

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
)

func TestRunsTasksAndLogsEachAttempt(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, e env) {
		var tasks []queue.NewTask
		for i := 0; i < 20; i++ {
			tasks = append(tasks, queue.NewTask{Body: "SELECT 1", Queue: "basic"})
		}
		tasks = append(tasks, queue.NewTask{Body: "SELECT * FROM no_such_table", Queue: "basic", MaxAttempts: 1})
		ids := e.enqueue(t, tasks...)
		n, _ := e.startNode(t, Config{NodeID: "n1", Poll: 50 * time.Millisecond})
		for _, id := range ids[:20] {
			e.waitState(t, id, queue.StateSucceeded, 20*time.Second)
		}
		failed := e.waitState(t, ids[20], queue.StateFailed, 20*time.Second)
		require.Contains(t, failed.LastError, "no_such_table")
		recs, err := e.store.TaskAttempts(e.ctx, ids[0])
		require.NoError(t, err)
		require.Len(t, recs, 1)
		require.Equal(t, n.ID(), recs[0].Node)
		require.True(t, strings.HasPrefix(recs[0].Worker, "basic-w"), "worker name %q", recs[0].Worker)
		require.Equal(t, queue.OutcomeSucceeded, recs[0].Outcome)
		if e.dialect == "postgres" {
			require.NotEmpty(t, recs[0].SessionID, "the backend pid is recorded")
		}
	})
}

func TestSettingsApplyOnEveryNode(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, e env) {
		_, err := e.store.UpdateQueue(e.ctx, "shared", queue.QueueUpdate{Workers: intp(1), Actor: "test"})
		require.NoError(t, err)
		var tasks []queue.NewTask
		for i := 0; i < 40; i++ {
			tasks = append(tasks, queue.NewTask{Body: sleepBody(t, e.dialect, 300*time.Millisecond), Queue: "shared"})
		}
		e.enqueue(t, tasks...)
		cfg := Config{Poll: 100 * time.Millisecond, SettingsEvery: 200 * time.Millisecond}
		cfg.NodeID = "a"
		a, _ := e.startNode(t, cfg)
		cfg.NodeID = "b"
		b, _ := e.startNode(t, cfg)
		busy := func(n *Node) int { return bodiesOf(n, "shared") }
		// workers = 1 per node: never more than one each.
		for end := time.Now().Add(700 * time.Millisecond); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			require.LessOrEqual(t, busy(a), 1)
			require.LessOrEqual(t, busy(b), 1)
		}
		// Growing applies on both nodes within a second.
		_, err = e.store.UpdateQueue(e.ctx, "shared", queue.QueueUpdate{Workers: intp(3), Actor: "test"})
		require.NoError(t, err)
		require.Eventually(t, func() bool { return busy(a) == 3 && busy(b) == 3 }, 1500*time.Millisecond, 10*time.Millisecond,
			"both nodes must grow to 3 workers within a second")
		// Pausing stops claims on both nodes; running tasks finish.
		_, err = e.store.UpdateQueue(e.ctx, "shared", queue.QueueUpdate{Paused: boolp(true), Actor: "test"})
		require.NoError(t, err)
		require.Eventually(t, func() bool { return busy(a) == 0 && busy(b) == 0 }, 15*time.Second, 10*time.Millisecond,
			"running tasks finish after a pause")
		before := countState(t, e, "shared", queue.StatePending)
		time.Sleep(600 * time.Millisecond)
		require.Equal(t, before, countState(t, e, "shared", queue.StatePending), "a paused queue starts nothing")
		require.Zero(t, countState(t, e, "shared", queue.StateRunning))
		// Shrinking while resumed: at most one per node again.
		_, err = e.store.UpdateQueue(e.ctx, "shared", queue.QueueUpdate{Paused: boolp(false), Workers: intp(1), Actor: "test"})
		require.NoError(t, err)
		require.Eventually(t, func() bool { return busy(a) == 1 && busy(b) == 1 }, 1500*time.Millisecond, 10*time.Millisecond)
		for end := time.Now().Add(500 * time.Millisecond); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			require.LessOrEqual(t, busy(a), 1)
			require.LessOrEqual(t, busy(b), 1)
		}
	})
}

func countState(t *testing.T, e env, q string, st queue.State) int64 {
	t.Helper()
	qs, err := e.store.Queues(e.ctx)
	require.NoError(t, err)
	for _, x := range qs {
		if x.Name == q {
			return x.Counts[st]
		}
	}
	return 0
}

func intp(v int) *int    { return &v }
func boolp(v bool) *bool { return &v }
