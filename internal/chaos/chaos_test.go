package chaos

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/testenv"
)

// chaosPlan is one chaos run: how many nodes, how they run, what they run and
// how often one is killed.
type chaosPlan struct {
	nodes     int
	nodeFlags []string
	wave      shape
	killEvery time.Duration
	// duration: keep enqueueing waves and killing this long (a long run);
	// 0 runs one wave to its end (the short run of go test).
	duration time.Duration
}

// Several node processes of the real binary share one database; every
// killEvery one of them, at random, is killed with SIGKILL and started again
// at once, while transactional and ordinary tasks run. Nothing is lost: every
// task succeeds, with exactly one succeeded attempt and otherwise only lost
// ones; each transactional effect commits exactly once; an ordinary task's
// effect repeats only as often as it has lost attempts.
func TestChaosKillAndRestart(t *testing.T) {
	t.Parallel()
	long := longRun(t, chaosEnv)
	flags := []string{"--workers", "8", "--lease", "2s", "--grace", "1s", "--poll", "50ms"}
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		// A transactional body holds SQLite's one writer: they run one at a
		// time cluster-wide, so they are short here.
		runChaos(t, newSQLite(t), chaosPlan{nodes: 3, nodeFlags: flags, duration: long, killEvery: killEvery(long),
			wave: shape{tx: 40, txSleep: [2]time.Duration{20 * time.Millisecond, 80 * time.Millisecond},
				ordinary: 120, ordinarySleep: [2]time.Duration{100 * time.Millisecond, 600 * time.Millisecond}}})
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		runChaos(t, newPostgres(t, testenv.NewDSN(t, testenv.Postgres)), chaosPlan{nodes: 3, nodeFlags: flags, duration: long,
			killEvery: killEvery(long),
			wave: shape{tx: 80, txSleep: [2]time.Duration{100 * time.Millisecond, 500 * time.Millisecond},
				ordinary: 120, ordinarySleep: [2]time.Duration{100 * time.Millisecond, 600 * time.Millisecond}}})
	})
}

// killEvery: often in the short run, so that a few kills land within it; every
// 3 s in a long one, as the fault run of issue 12 did.
func killEvery(long time.Duration) time.Duration {
	if long > 0 {
		return 3 * time.Second
	}
	return 1500 * time.Millisecond
}

func runChaos(t *testing.T, d database, p chaosPlan) {
	w := newWorkload(t, d, "chaos")
	dir := t.TempDir()
	incarnation := 0
	start := func(slot int) *node {
		incarnation++
		name := fmt.Sprintf("n%d-%d", slot, incarnation)
		return startNode(t, dir, name, nodeArgs(d.DSN, name, p.nodeFlags...))
	}
	nodes := make([]*node, p.nodes)
	for i := range nodes {
		nodes[i] = start(i)
	}
	began := time.Now()
	w.enqueue(t, p.wave)
	deadline := began.Add(p.duration + 5*time.Minute)
	kill := time.NewTicker(p.killEvery)
	defer kill.Stop()
	kills := 0
	for {
		left, ok := w.unfinished()
		require.True(t, ok, "reading the queue's counts")
		enqueueing := p.duration > 0 && time.Since(began) < p.duration
		if enqueueing && left < int64(p.wave.size()/2) {
			w.enqueue(t, p.wave)
			continue
		}
		if left == 0 && !enqueueing {
			break
		}
		require.True(t, time.Now().Before(deadline), "%d tasks still unfinished after %s; %d kills", left, time.Since(began).Round(time.Second), kills)
		select {
		case <-kill.C:
			slot := rand.N(len(nodes))
			nodes[slot].kill(t)
			nodes[slot] = start(slot)
			kills++
		case <-time.After(100 * time.Millisecond):
		}
	}
	elapsed := time.Since(began)
	for _, n := range nodes {
		n.stop(t, 30*time.Second)
	}
	c := w.verify(t, queue.OutcomeSucceeded, queue.OutcomeLost)
	t.Logf("%s: %d nodes, %d kills in %s: %s", d.Dialect, p.nodes, kills, elapsed.Round(time.Millisecond), c)
	require.GreaterOrEqual(t, kills, 2, "the run killed nodes while tasks ran")
	require.Positive(t, c.attempts[queue.OutcomeLost], "kills cut attempts short, which were reclaimed as lost")
}
