package chaos

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/testenv"
)

// The load run's sizes: 100 dashboard pages open while the API enqueues 1,000
// tasks a second (a batch of 100 every 100 ms, one of them a 3 s task so that
// a stop finds some running), for 3 s in go test and READPAST_LOAD long.
const (
	loadClients  = 100
	loadPerBatch = 100
	loadShort    = 3 * time.Second
	slowTask     = 3 * time.Second
)

// One node of the real binary under load, with 100 websocket clients on its
// live views: every client keeps getting updates to the end; the node's
// goroutines come back to what they were before the clients and the load; its
// heap stays bounded; and a graceful stop (SIGTERM) in the middle of the load
// loses nothing: every task has ended or was released, no attempt is lost,
// and a node started after runs what was left. Not parallel: the figures are
// the node's, on a machine that runs nothing else of this package meanwhile.
func TestLiveViewUnderLoad(t *testing.T) {
	d := longRun(t, loadEnv)
	if d == 0 {
		d = loadShort
	}
	t.Run("sqlite", func(t *testing.T) { runLoad(t, newSQLite(t), d) })
	t.Run("postgres", func(t *testing.T) { runLoad(t, newPostgres(t, testenv.NewDSN(t, testenv.Postgres)), d) })
}

func runLoad(t *testing.T, db database, d time.Duration) {
	const q = "load"
	dir := t.TempDir()
	flags := []string{"--workers", "64", "--grace", "1s", "--poll", "50ms"}
	n := startNode(t, dir, "load-1", nodeArgs(db.DSN, "load-1", flags...))
	base := n.url(t)
	time.Sleep(time.Second) // settled: the first claims and heartbeats are done
	before := scrape(t, base)

	// Under load: the clients connect, the API enqueues, the heap is sampled.
	clients := dialMany(t, base, loadClients)
	gen := newLoadGen(t, base, q, loadPerBatch, testenv.SleepBody(t, db.Dialect, slowTask))
	began := time.Now()
	peaks, halfway := sample(t, base, gen, clients, d)
	loadTook := time.Since(began)
	c, err := queueCounts(db.Store, q)
	require.NoError(t, err)
	require.Zero(t, gen.refused.Load(), "every batch was accepted (last error: %v)", gen.lastErr.Load())
	waitFinished(t, db, q, 5*time.Minute)
	ran := time.Since(began)
	peak := runtimeStats{goroutines: max(peaks[0].goroutines, peaks[1].goroutines), heapInuse: max(peaks[0].heapInuse, peaks[1].heapInuse)}
	for i, c := range clients {
		require.Zero(t, c.closeCode.Load(), "client %d (%s) is still connected", i, c.view)
		require.Greater(t, c.messages.Load(), halfway[i], "client %d (%s) still got updates in the second half of the load", i, c.view)
	}
	msgs := make([]int64, len(clients))
	for i, c := range clients {
		msgs[i] = c.messages.Load()
		c.close()
	}
	gen.closeIdle()
	// The hub stops a few seconds after its last client left; every goroutine
	// of the clients and the load must be gone by then.
	var after runtimeStats
	require.Eventually(t, func() bool {
		after = scrape(t, base)
		return after.goroutines <= before.goroutines+goroutineSlack
	}, 30*time.Second, 250*time.Millisecond, "goroutines back to %d (+%d) once the clients and the load are gone", before.goroutines, goroutineSlack)
	slices.Sort(msgs)
	t.Logf("%s: %d tasks enqueued in %s (%.0f/s), %d pending and %d running when the load stopped, "+
		"the last ended %s after the load began; %d clients got %d–%d updates (median %d); "+
		"goroutines %d before, %d at the peak, %d after; heap in use %s before, at most %s in the load's first half and %s in its second",
		db.Dialect, gen.accepted.Load(), loadTook.Round(time.Millisecond), float64(gen.accepted.Load())/loadTook.Seconds(), c[queue.StatePending], c[queue.StateRunning],
		ran.Round(time.Millisecond), len(clients), msgs[0], msgs[len(msgs)-1], msgs[len(msgs)/2],
		before.goroutines, peak.goroutines, after.goroutines, mib(before.heapInuse), mib(peaks[0].heapInuse), mib(peaks[1].heapInuse))
	require.Less(t, peak.heapInuse, int64(heapBound), "the heap stays bounded under load")
	require.LessOrEqual(t, peaks[1].heapInuse, 2*peaks[0].heapInuse+32<<20, "the heap does not grow with the tasks run")

	stopUnderLoad(t, db, n, base, q, dir, flags)
}

// goroutineSlack: the node's own background goroutines come and go (a pool's
// connection opener, a timer); a leak per client or per task would be
// hundreds or thousands.
const goroutineSlack = 10

// heapBound: far above what 100 clients and 1,000 tasks a second need (under
// 20 MiB: docs/RELIABILITY.md), and far below what keeping anything per task
// or per message would grow to in a long run.
const heapBound = 128 << 20

// sample runs the load for d while reading the node's runtime figures each
// half second; it returns their peaks in the load's first and second half, and
// each client's count of updates halfway through.
func sample(t *testing.T, base string, gen *loadGen, clients []*liveClient, d time.Duration) (peaks [2]runtimeStats, halfway []int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { gen.run(ctx) })
	half := time.After(d / 2)
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for ctx.Err() == nil {
		select {
		case <-half:
			halfway = make([]int64, len(clients))
			for i, c := range clients {
				halfway[i] = c.messages.Load()
			}
		case <-tick.C:
			s, p := scrape(t, base), &peaks[0]
			if halfway != nil {
				p = &peaks[1]
			}
			p.goroutines = max(p.goroutines, s.goroutines)
			p.heapInuse = max(p.heapInuse, s.heapInuse)
		case <-ctx.Done():
		}
	}
	wg.Wait()
	require.NotNil(t, halfway)
	return peaks, halfway
}

// waitFinished waits until queue q has nothing pending or running.
func waitFinished(t *testing.T, db database, q string, within time.Duration) {
	t.Helper()
	w := &workload{database: db, queue: q}
	require.Eventually(t, func() bool {
		left, ok := w.unfinished()
		return ok && left == 0
	}, within, 100*time.Millisecond, "queue %s still has unfinished tasks after %s", q, within)
}

// stopUnderLoad connects the clients again, loads the node, and stops it with
// SIGTERM while the load goes on. The node stops within its grace period
// (plus the HTTP shutdown), every client is told to go away (1001), and no
// task is lost: each has ended or was released (pending again, its attempt
// cancelled "released at shutdown"), none is running, no attempt is lost. A
// node started afterwards runs every task left, each succeeding once.
func stopUnderLoad(t *testing.T, db database, n *node, base, q, dir string, flags []string) {
	t.Helper()
	clients := dialMany(t, base, loadClients)
	gen := newLoadGen(t, base, q, loadPerBatch, testenv.SleepBody(t, db.Dialect, slowTask))
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { gen.run(ctx) })
	time.Sleep(1500 * time.Millisecond)
	took := n.stop(t, 30*time.Second)
	cancel()
	wg.Wait()
	for i, c := range clients {
		<-c.done
		require.Equal(t, int64(websocket.CloseGoingAway), c.closeCode.Load(), "client %d (%s) was told the server is going away", i, c.view)
	}

	tasks, attempts := readQueue(t, db, q)
	require.GreaterOrEqual(t, int64(len(tasks)), gen.accepted.Load(), "every accepted task is stored")
	released := 0
	for _, task := range tasks {
		require.Contains(t, []queue.State{queue.StateSucceeded, queue.StatePending}, task.State, "task %d ended or was released", task.ID)
		if task.State == queue.StatePending && len(attempts[task.ID]) > 0 {
			last := attempts[task.ID][len(attempts[task.ID])-1]
			require.Equal(t, queue.OutcomeCancelled, last.Outcome, "task %d was released", task.ID)
			require.Equal(t, "released at shutdown", last.Error)
			released++
		}
		for _, a := range attempts[task.ID] {
			require.NotEqual(t, queue.OutcomeLost, a.Outcome, "task %d lost an attempt", task.ID)
		}
	}
	t.Logf("%s: SIGTERM under load: the node stopped in %s (grace 1 s); %d tasks in the queue, %d released to run again",
		db.Dialect, took.Round(time.Millisecond), len(tasks), released)

	after := startNode(t, dir, "load-2", nodeArgs(db.DSN, "load-2", flags...))
	waitFinished(t, db, q, 5*time.Minute)
	after.stop(t, 30*time.Second)
	tasks, attempts = readQueue(t, db, q)
	for _, task := range tasks {
		require.Equal(t, queue.StateSucceeded, task.State, "task %d", task.ID)
		succeeded := 0
		for _, a := range attempts[task.ID] {
			require.NotEqual(t, queue.OutcomeLost, a.Outcome, "task %d lost an attempt", task.ID)
			if a.Outcome == queue.OutcomeSucceeded {
				succeeded++
			}
		}
		require.Equal(t, 1, succeeded, "task %d succeeded exactly once", task.ID)
	}
}
