package workers

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/target"
	"readpast/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// env is one dialect's store and target on a fresh database.
type env struct {
	*testenv.Env
	ctx     context.Context
	dialect string
	dsn     string
	store   Store
	target  target.Target
}

// dialects runs fn once per dialect that can run here, as parallel subtests.
func dialects(t *testing.T, fn func(t *testing.T, e env)) {
	testenv.ForEachDialect(t, func(t *testing.T, te *testenv.Env) { fn(t, newEnv(t, te)) })
}

// newEnv adds the target to a testenv.Env.
func newEnv(t *testing.T, te *testenv.Env) env {
	return env{Env: te, ctx: te.Ctx, dialect: string(te.Dialect), dsn: te.DSN, store: te.Store, target: te.Target(t)}
}

// startNode runs a node until the test ends (or stop is called) and waits until
// it is ready.
func (e env) startNode(t *testing.T, cfg Config) (n *Node, stop func()) {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t)
	}
	n, err := New(e.store, e.target, cfg)
	require.NoError(t, err)
	return n, testenv.StartNode(t, n)
}

// sleepBody is a body that runs for about d on the dialect.
func sleepBody(t *testing.T, dialect string, d time.Duration) string {
	return testenv.SleepBody(t, testenv.Dialect(dialect), d)
}

func (e env) enqueue(t *testing.T, tasks ...queue.NewTask) []int64 {
	t.Helper()
	res, err := e.store.Enqueue(e.ctx, tasks)
	require.NoError(t, err)
	return queue.IDs(res)
}

// waitState waits until task id is in state want, within the time given (five
// times it on Babelfish, whose round trips are slow: testenv.Slower).
func (e env) waitState(t *testing.T, id int64, want queue.State, within time.Duration) *queue.Task {
	t.Helper()
	within = e.Slower(t, within)
	var got *queue.Task
	require.Eventually(t, func() bool {
		var err error
		got, err = e.store.Get(e.ctx, id)
		return err == nil && got.State == want
	}, within, 20*time.Millisecond, "task %d did not reach %s within %s (last: %+v)", id, want, within, got)
	return got
}

// waitAll waits until every task of ids is in state want.
func (e env) waitAll(t *testing.T, ids []int64, want queue.State, within time.Duration) {
	t.Helper()
	for _, id := range ids {
		e.waitState(t, id, want, within)
	}
}

// bodiesOf returns how many bodies of queue q run on node n now.
func bodiesOf(n *Node, q string) int {
	for _, p := range n.Snapshot().Pools {
		if p.Queue == q {
			return p.Running
		}
	}
	return 0
}
