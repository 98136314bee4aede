//go:build unix

package chaos

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/testenv"
)

// freezePlan is one freeze run: three nodes drain a backlog of short tasks
// while one of them is stopped (SIGSTOP: a VM pause, a GC stall, a frozen
// host) for a window, then continued.
type freezePlan struct {
	window time.Duration // how long the node stays frozen, and the length of each measured window
	wave   int           // tasks of a wave, half transactional, topped up while measuring
	tasks  shape
	// goal: the share of their throughput the other nodes must keep while one
	// is frozen; 0 only reports it (SQLite: one file's write lock is every
	// node's, see docs/RELIABILITY.md).
	goal float64
}

// One sick node never stops the cluster (docs/RELIABILITY.md, "A stalled
// node"). Three node processes of the real binary drain transactional and
// ordinary tasks; one is frozen with SIGSTOP for a window. The other two keep
// at least 80 % of the throughput they had in the window before: nothing a
// frozen node's transaction holds is taken by their claims, finishes or
// heartbeats. Before, a transactional task's completion ran inside its body's
// transaction, and a node frozen between that completion and its COMMIT held
// the queue's count and throughput rows, which every finish takes: the other
// nodes finished nothing until it was continued. Afterwards every task has
// exactly one succeeded attempt and each transactional effect committed once.
func TestFrozenNodeStopsNoOtherNode(t *testing.T) {
	t.Parallel()
	long := longRun(t, chaosEnv)
	window := 4 * time.Second
	if long > 0 {
		window = long / 4
	}
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		runFreeze(t, newPostgres(t, testenv.NewDSN(t, testenv.Postgres)), freezePlan{window: window, goal: 0.8, wave: 2000,
			tasks: shape{txSleep: [2]time.Duration{20 * time.Millisecond, 40 * time.Millisecond},
				ordinarySleep: [2]time.Duration{20 * time.Millisecond, 40 * time.Millisecond}}})
	})
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		runFreeze(t, newSQLite(t), freezePlan{window: window, wave: 600,
			tasks: shape{txSleep: [2]time.Duration{2 * time.Millisecond, 5 * time.Millisecond},
				ordinarySleep: [2]time.Duration{20 * time.Millisecond, 40 * time.Millisecond}}})
	})
}

func runFreeze(t *testing.T, d database, p freezePlan) {
	w := newWorkload(t, d, "freeze")
	dir := t.TempDir()
	// The lease is longer than the window: the frozen node's tasks are not
	// reclaimed during it, so the others' throughput is their own work.
	flags := []string{"--workers", "8", "--lease", (3 * p.window).String(), "--grace", "1s", "--poll", "50ms"}
	nodes := make([]*node, 3)
	for i := range nodes {
		name := fmt.Sprintf("f%d", i)
		nodes[i] = startNode(t, dir, name, nodeArgs(d.DSN, name, flags...))
		nodes[i].url(t)
	}
	// A backlog that never runs dry while throughput is measured: topped up
	// with another wave whenever less than half a wave is left.
	p.tasks.tx, p.tasks.ordinary = p.wave/2, p.wave/2
	w.enqueue(t, p.tasks)
	keepBusy := func(d time.Duration) {
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			if left, ok := w.unfinished(); ok && left < int64(p.wave/2) {
				w.enqueue(t, p.tasks)
			}
		}
	}

	keepBusy(p.window) // warm: every node claiming and finishing
	before := finishedByNode(t, d, time.Now().Add(-p.window), time.Now())
	frozen := nodes[0]
	require.NoError(t, frozen.cmd.Process.Signal(syscall.SIGSTOP), "freezing node %s", frozen.name)
	froze := time.Now()
	keepBusy(p.window)
	during := finishedByNode(t, d, froze, time.Now())
	require.NoError(t, frozen.cmd.Process.Signal(syscall.SIGCONT), "continuing node %s", frozen.name)

	others := func(m map[string]int) (n int) {
		for _, x := range nodes[1:] {
			n += m[x.name]
		}
		return n
	}
	kept := float64(others(during)) / float64(max(1, others(before)))
	t.Logf("%s: finished per node before the freeze %v, during it %v (window %s): the other nodes kept %.0f %% of their throughput",
		d.Dialect, before, during, p.window, 100*kept)
	require.Positive(t, others(before), "the other nodes finished tasks before the freeze")

	w.waitDrained(t, 5*time.Minute)
	for _, n := range nodes {
		n.stop(t, 30*time.Second)
	}
	c := w.verify(t, queue.OutcomeSucceeded, queue.OutcomeLost)
	t.Logf("%s: %s", d.Dialect, c)
	if p.goal > 0 {
		require.GreaterOrEqual(t, kept, p.goal, "with one node frozen the others keep %.0f %% of their throughput", 100*p.goal)
	}
}

// finishedByNode counts the attempts each node ended in [from, to).
func finishedByNode(t *testing.T, d database, from, to time.Time) map[string]int {
	t.Helper()
	q := "SELECT node, count(*) FROM readpast_attempts WHERE finished_at >= $1 AND finished_at < $2 GROUP BY node"
	args := []any{from.UTC(), to.UTC()}
	if d.Dialect == testenv.SQLite {
		q = "SELECT node, count(*) FROM readpast_attempts WHERE finished_at >= ? AND finished_at < ? GROUP BY node"
		args = []any{from.UnixMicro(), to.UnixMicro()}
	}
	rows, err := d.db.QueryContext(t.Context(), q, args...)
	require.NoError(t, err)
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var node string
		var n int
		require.NoError(t, rows.Scan(&node, &n))
		out[node] = n
	}
	require.NoError(t, rows.Err())
	return out
}
