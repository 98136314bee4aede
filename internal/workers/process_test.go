package workers

import (
	"context"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/queue/open"
	"readpast/internal/target"
)

// The child process of the tests below: a node on the DSN in the environment.
const (
	childDSNEnv = "READPAST_TEST_CHILD_DSN"
)

func TestChildNodeProcess(t *testing.T) {
	dsn := os.Getenv(childDSNEnv)
	if dsn == "" {
		t.Skip("only run as a child of the process tests")
	}
	ctx := context.Background()
	s, err := open.Store(ctx, dsn, queue.Options{})
	require.NoError(t, err)
	tgt, err := target.Open(ctx, dsn)
	require.NoError(t, err)
	cfg := Config{NodeID: "child", Lease: time.Second, Poll: 50 * time.Millisecond, TargetIsStore: true}
	n, err := New(s, tgt, cfg)
	require.NoError(t, err)
	_ = n.Run(ctx) // runs until killed
}

func startChild(t *testing.T, e env) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildNodeProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), childDSNEnv+"="+e.dsn)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// A node killed with SIGKILL mid-task leaves a lease that another node reclaims:
// the attempt is logged lost and the task runs again.
func TestKilledNodeLeavesALeaseAnotherNodeReclaims(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, e env) {
		id := e.enqueue(t, queue.NewTask{Body: sleepBody(t, e.dialect, 1500*time.Millisecond), Queue: "k"})[0]
		child := startChild(t, e)
		running := e.waitState(t, id, queue.StateRunning, 20*time.Second)
		require.Contains(t, running.LeaseOwner, "child/")
		require.NoError(t, child.Process.Signal(syscall.SIGKILL))
		_ = child.Wait()

		e.startNode(t, Config{NodeID: "survivor", Lease: time.Second, Poll: 50 * time.Millisecond, ReclaimEvery: 200 * time.Millisecond})
		e.waitState(t, id, queue.StateSucceeded, 30*time.Second)
		recs, err := e.store.TaskAttempts(e.ctx, id)
		require.NoError(t, err)
		require.Len(t, recs, 2)
		require.Equal(t, queue.OutcomeLost, recs[0].Outcome)
		require.Equal(t, "child", recs[0].Node)
		require.Equal(t, queue.OutcomeSucceeded, recs[1].Outcome)
		require.Equal(t, "survivor", recs[1].Node)

		nodes, err := e.store.Nodes(e.ctx, time.Second)
		require.NoError(t, err)
		for _, n := range nodes {
			require.Equal(t, n.ID == "child", n.Gone, "node %s gone=%v", n.ID, n.Gone)
		}
	})
}

// A worker that dies after its transactional body ran but before the commit
// leaves no effect; the task runs again and its effect commits exactly once.
func TestTransactionalBodyDiesBeforeCommit(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, e env) {
		_, err := e.target.Run(e.ctx, "CREATE TABLE effect (n int)", nil)
		require.NoError(t, err)
		// The effect is written first, then the body runs on: the child dies
		// with the effect written and not committed.
		body := "INSERT INTO effect VALUES (1)\nGO\n" + sleepBody(t, e.dialect, 3*time.Second)
		id := e.enqueue(t, queue.NewTask{Body: body, Queue: "tx", Transactional: true})[0]
		child := startChild(t, e)
		e.waitState(t, id, queue.StateRunning, 20*time.Second)
		time.Sleep(time.Second)
		require.NoError(t, child.Process.Signal(syscall.SIGKILL))
		_ = child.Wait()
		require.Equal(t, int64(0), countEffect(t, e), "the uncommitted effect must be gone")

		e.startNode(t, Config{NodeID: "survivor", Lease: time.Second, Poll: 50 * time.Millisecond, ReclaimEvery: 200 * time.Millisecond, TargetIsStore: true})
		e.waitState(t, id, queue.StateSucceeded, 30*time.Second)
		require.Equal(t, int64(1), countEffect(t, e), "the effect commits exactly once")
		recs, err := e.store.TaskAttempts(e.ctx, id)
		require.NoError(t, err)
		require.Equal(t, []queue.Outcome{queue.OutcomeLost, queue.OutcomeSucceeded}, []queue.Outcome{recs[0].Outcome, recs[1].Outcome})
	})
}

// countEffect counts the effect table's rows through the target (a statement
// whose rows-affected is the count).
func countEffect(t *testing.T, e env) int64 {
	t.Helper()
	res, err := e.target.Run(e.ctx, "UPDATE effect SET n = n", nil)
	require.NoError(t, err)
	return res.RowsAffected
}
