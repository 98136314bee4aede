package workers

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/queue/open"
	"readpast/internal/target"
	"readpast/internal/testpg"
)

func TestMain(m *testing.M) { os.Exit(testpg.Main(m)) }

// env is one dialect's store and target on a fresh database.
type env struct {
	ctx     context.Context
	dialect string
	dsn     string
	store   Store
	target  target.Target
}

// dialects runs fn once per dialect that can run here, as subtests.
func dialects(t *testing.T, fn func(t *testing.T, e env)) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		fn(t, newEnv(t, "sqlite://"+filepath.Join(t.TempDir(), "w.db")))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		fn(t, newEnv(t, testpg.Shared(t).NewDatabase(t)))
	})
}

func newEnv(t *testing.T, dsn string) env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	s, err := open.Store(ctx, dsn, queue.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	require.NoError(t, s.Migrate(ctx))
	tgt, err := target.Open(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { tgt.Close() })
	return env{ctx: ctx, dialect: s.Dialect(), dsn: dsn, store: s.(Store), target: tgt}
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
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = n.Run(ctx) }()
	select {
	case <-n.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("node did not become ready")
	}
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return n, stop
}

// sleepBody is a body that runs for about d on the dialect.
func sleepBody(t *testing.T, dialect string, d time.Duration) string {
	if dialect == "postgres" {
		return fmt.Sprintf("SELECT pg_sleep(%.3f)", d.Seconds())
	}
	// SQLite has no sleep: a recursive count, sized by a measured rate (the race
	// detector slows it several times); it is interrupted on cancel.
	return fmt.Sprintf("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < %d) SELECT count(*) FROM c",
		int64(d.Seconds()*sqliteCountRate(t))+1)
}

var countRate struct {
	once sync.Once
	rate float64
}

// sqliteCountRate measures how many rows per second the recursive count makes here.
func sqliteCountRate(t *testing.T) float64 {
	countRate.once.Do(func() {
		db, err := sql.Open("sqlite", ":memory:")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		const n = 200_000
		start := time.Now()
		var got int64
		err = db.QueryRow(fmt.Sprintf("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < %d) SELECT count(*) FROM c", n)).Scan(&got)
		if err != nil {
			t.Fatal(err)
		}
		countRate.rate = n / time.Since(start).Seconds()
	})
	return countRate.rate
}

func (e env) enqueue(t *testing.T, tasks ...queue.NewTask) []int64 {
	t.Helper()
	ids, err := e.store.Enqueue(e.ctx, tasks)
	require.NoError(t, err)
	return ids
}

func (e env) waitState(t *testing.T, id int64, want queue.State, within time.Duration) *queue.Task {
	t.Helper()
	var got *queue.Task
	require.Eventually(t, func() bool {
		var err error
		got, err = e.store.Get(e.ctx, id)
		return err == nil && got.State == want
	}, within, 20*time.Millisecond, "task %d did not reach %s within %s (last: %+v)", id, want, within, got)
	return got
}
