//go:build unix

package chaos

import (
	"fmt"
	"net/url"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/faultproxy"
	"readpast/internal/queue"
	"readpast/internal/testenv"
	"readpast/internal/testpg"
)

// partitionPlan is one partition run's timing.
type partitionPlan struct {
	lease   time.Duration // every node's --lease
	window  time.Duration // how long each fault lasts; throughput is compared over it
	measure time.Duration // the window before each fault the throughput is compared with
	settle  time.Duration // after each restore, before the next scenario
}

// probeEvery is how often the probe looks at the server and the nodes'
// metrics: a few dozen times a window.
func (p partitionPlan) probeEvery() time.Duration { return max(250*time.Millisecond, p.window/60) }

// heldFor says how long after began the hurt node last held a task.
func heldFor(s probeSummary, began time.Time) string {
	if s.heldLastSeen.IsZero() {
		return "never"
	}
	return s.heldLastSeen.Sub(began).Round(100 * time.Millisecond).String()
}

// finishedByNodeQueue counts the attempts each node finished in [from, to), by queue.
func finishedByNodeQueue(t *testing.T, d database, from, to time.Time) map[string]map[string]int {
	t.Helper()
	rows, err := d.db.QueryContext(t.Context(), `SELECT node, queue, count(*) FROM readpast_attempts
		WHERE finished_at >= $1 AND finished_at < $2 GROUP BY node, queue`, from.UTC(), to.UTC())
	require.NoError(t, err)
	defer rows.Close()
	out := map[string]map[string]int{}
	for rows.Next() {
		var node, q string
		var n int
		require.NoError(t, rows.Scan(&node, &q, &n))
		if out[node] == nil {
			out[node] = map[string]int{}
		}
		out[node][q] = n
	}
	require.NoError(t, rows.Err())
	return out
}

// nodeSlots are the worker slots of each node: a runs the ordinary queue (8),
// b and c both queues (8 each).
var nodeSlots = map[string]int{"a": 8, "b": 16, "c": 16}

// partitionGoal is the share of their throughput the nodes not hit must keep
// while one node is cut off, blackholed or frozen (issue 25).
const partitionGoal = 0.8

// No node's stall or partition blocks another node, and no task runs on two
// nodes at once (issue 25, items 1 and 2; docs/RELIABILITY.md, "A partitioned
// node"). Three node processes of the real binary share one PostgreSQL
// database:
//
//   - node a reaches its store through a proxy the test controls and its
//     target directly (--target-dsn): a cut or blackhole of that proxy is a
//     store lost while the target answers, which the fence covers. Its target
//     is not the store, so it cannot run transactional tasks: it runs only the
//     ordinary queue (--workers 0 for queues that set no workers; the ordinary
//     queue sets 8 in the database).
//   - node b reaches its store, which is its target, through a proxy of its
//     own: a cut or blackhole takes both, so its bodies' sessions are left to
//     the server; it runs both queues.
//   - node c reaches the database directly and is never hurt.
//
// The scenarios, one after another: cut a, blackhole a, cut b, blackhole b,
// SIGSTOP b (a frozen node runs nothing, the fence included), each for a
// window longer than the lease plus a reclaim, then restored. Throughout, a
// backlog of short transactional and ordinary tasks keeps every node busy,
// and before each fault long tasks (four leases) are enqueued ahead of it
// until the hurt node holds one, so that its copy, left alone, would run well
// past the reclaim of its lease, when another node takes the task over.
//
// Checked: what the server ran (testenv.SessionWatch, by the server's clock)
// never shows two sessions running one task's body at once; every task
// succeeded exactly once, each transactional effect is there exactly once, and
// an ordinary one repeats only for an attempt that did not succeed; the nodes
// not hurt kept partitionGoal of the throughput they had just before.
//
// Brief in go test (lease 3 s, windows of 5 s); READPAST_CHAOS=4m runs
// windows of a quarter of it (60 s) on a lease of a third of that.
func TestPartitionStopsNoOtherNode(t *testing.T) {
	t.Parallel()
	p := partitionPlan{lease: 3 * time.Second, window: 5 * time.Second, measure: 3 * time.Second, settle: time.Second}
	d := longRun(t, chaosEnv)
	long := d > 0
	if long {
		p.window = d / 4
		p.lease = p.window / 3
		p.measure = p.window / 2
		p.settle = p.lease
	}
	srv := testpg.Shared(t)
	dsn := srv.NewDatabase(t)
	db := newPostgres(t, dsn)
	w := newWorkload(t, db, "part-ord")
	w.txQueue = "part-tx"
	eight := 8
	_, err := w.Store.UpdateQueue(t.Context(), w.queue, queue.QueueUpdate{Workers: &eight, Actor: "test"})
	require.NoError(t, err)

	proxied := func() (*faultproxy.Proxy, string) {
		px := faultproxy.Start(t, "unix", filepath.Join(srv.SocketDir(), ".s.PGSQL.5432"))
		u, err := url.Parse(dsn)
		require.NoError(t, err)
		return px, "postgres://postgres@" + px.Addr() + u.Path + "?sslmode=disable"
	}
	pa, dsnA := proxied()
	pb, dsnB := proxied()
	flags := []string{"--lease", p.lease.String(), "--grace", "1s", "--poll", "50ms"}
	dir := t.TempDir()
	a := startNode(t, dir, "a", nodeArgs(dsnA, "a", append([]string{"--target-dsn", dsn, "--workers", "0"}, flags...)...))
	b := startNode(t, dir, "b", nodeArgs(dsnB, "b", append([]string{"--workers", "8"}, flags...)...))
	c := startNode(t, dir, "c", nodeArgs(dsn, "c", append([]string{"--workers", "8"}, flags...)...))
	nodes := []*node{a, b, c}
	for _, n := range nodes {
		n.url(t)
	}
	watch := testenv.WatchSessions(t, dsn)
	var hurtNow atomic.Pointer[node] // the node of the scenario under way, for the probe
	pr := startProbe(t, w, nodes, hurtNow.Load, p.probeEvery())
	defer pr.stop()

	wave := shape{tx: 300, txSleep: [2]time.Duration{20 * time.Millisecond, 40 * time.Millisecond},
		ordinary: 300, ordinarySleep: [2]time.Duration{20 * time.Millisecond, 40 * time.Millisecond}}
	w.enqueue(t, wave)
	// Topped up by what is pending, not unfinished: a hurt node's claimed
	// tasks are running until their leases end, and counting them would let
	// the others run dry. Each queue on its own (workload.topUp).
	keepBusy := func(d time.Duration) {
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			w.topUp(t, wave)
		}
	}
	keepBusy(p.measure) // warm: every node claiming and finishing

	stop := func(n *node) func() {
		return func() { require.NoError(t, n.cmd.Process.Signal(syscall.SIGSTOP), "freezing node %s", n.name) }
	}
	cont := func(n *node) func() {
		return func() { require.NoError(t, n.cmd.Process.Signal(syscall.SIGCONT), "continuing node %s", n.name) }
	}
	scenarios := []struct {
		name           string
		hurt           *node
		fault, restore func()
	}{
		{"cut a (store lost, target answers)", a, pa.Cut, pa.Restore},
		{"blackhole a (store lost, target answers)", a, pa.Blackhole, pa.Restore},
		{"cut b (store and target lost)", b, pb.Cut, pb.Restore},
		{"blackhole b (store and target lost)", b, pb.Blackhole, pb.Restore},
		{"SIGSTOP b", b, stop(b), cont(b)},
	}
	var longKeys []string
	var missed []string
	var doneDuring, expected float64 // the others' tasks in the windows, and what their rate before would have done
	for _, s := range scenarios {
		hurtNow.Store(s.hurt)
		// Long tasks until the hurt node holds one: the others' claims,
		// which take many tasks at once, may take the first ones.
		holds := 0
		for round := 0; round < 20 && holds == 0; round++ {
			keys := w.enqueueLong(t, 4*p.lease)
			longKeys = append(longKeys, keys...)
			holds = w.held(t, s.hurt.name, longKeys, keepBusy)
		}

		beforeFrom := time.Now().Add(-p.measure)
		before := finishedByNode(t, db, beforeFrom, time.Now())
		beforeByQueue := finishedByNodeQueue(t, db, beforeFrom, time.Now())
		cpu := make([]time.Duration, len(nodes))
		for i, n := range nodes {
			cpu[i] = cpuTime(n.cmd.Process.Pid)
		}
		s.fault()
		began := time.Now()
		keepBusy(p.window)
		ended := time.Now()
		during := finishedByNode(t, db, began, ended)
		duringByQueue := finishedByNodeQueue(t, db, began, ended)
		// What each node cost the machine in the window: a hurt node that
		// spun on its errors would take the others' CPU.
		used := map[string]string{}
		for i, n := range nodes {
			used[n.name] = (cpuTime(n.cmd.Process.Pid) - cpu[i]).String()
		}
		s.restore()
		keepBusy(p.settle)

		others := func(m map[string]int) (n int) {
			for _, x := range nodes {
				if x != s.hurt {
					n += m[x.name]
				}
			}
			return n
		}
		rateBefore := float64(others(before)) / p.measure.Seconds()
		rateDuring := float64(others(during)) / ended.Sub(began).Seconds()
		// The long tasks enqueued until the hurt node held one went to the
		// others too, each holding a worker slot through the window (four
		// leases): the test's doing, not the hurt node's. Shown per slot free
		// of them beside the goal, which is judged on the throughput itself.
		var otherNames []string
		slots := 0
		for _, x := range nodes {
			if x != s.hurt {
				otherNames = append(otherNames, x.name)
				slots += nodeSlots[x.name]
			}
		}
		srvBefore, srvDuring := pr.summary(t, beforeFrom, began), pr.summary(t, began, ended)
		freeBefore := float64(slots) - srvBefore.longHeld(otherNames...)
		freeDuring := float64(slots) - srvDuring.longHeld(otherNames...)
		kept := rateDuring / max(rateBefore, 1)
		perFree := kept * freeBefore / max(freeDuring, 1)
		doneDuring += float64(others(during))
		expected += rateBefore * ended.Sub(began).Seconds()
		t.Logf("%s (%s–%s): node %s held %d long tasks; the other nodes finished %.0f tasks/s before and %.0f/s during the %s window: kept %.0f %%; "+
			"their %d worker slots ran the test's long tasks in %.1f before and %.1f during: per slot free of them, kept %.0f %% (per node before %v, during %v; CPU used in the window %v)",
			s.name, began.Format("15:04:05.000"), ended.Format("15:04:05.000"), s.hurt.name, holds, rateBefore, rateDuring, ended.Sub(began).Round(time.Millisecond), 100*kept,
			slots, float64(slots)-freeBefore, float64(slots)-freeDuring, 100*perFree, before, during, used)
		// What the nodes not hurt waited on, before and during, and what the
		// hurt node held: figures the machine's load does not make up.
		for _, n := range nodes {
			if n != s.hurt {
				t.Logf("  node %s: before %s; during %s; finished by queue before %v, during %v", n.name,
					pr.latency(n.name, beforeFrom, began), pr.latency(n.name, began, ended), beforeByQueue[n.name], duringByQueue[n.name])
			}
		}
		t.Logf("  server before: %s", srvBefore)
		t.Logf("  server during: %s; the hurt node last held a task %s after the fault", srvDuring, heldFor(srvDuring, began))
		if kept < partitionGoal {
			missed = append(missed, fmt.Sprintf("%s: kept %.0f %% (%.0f %% per slot free of the long tasks)", s.name, 100*kept, 100*perFree))
		}
	}

	w.waitDrained(t, 5*time.Minute)
	for _, n := range nodes {
		n.stop(t, 30*time.Second)
	}
	watch.Stop()
	require.NoError(t, watch.Err(), "watching the server's sessions")

	samples := len(watch.Overlaps()) // samples that saw two sessions run one body
	var overlaps []string
	taken := 0 // long tasks run by more than one session: taken over from a hurt node
	for _, k := range longKeys {
		spans := watch.Spans(k)
		require.NotEmpty(t, spans, "%s ran", k)
		overlaps = append(overlaps, spansOverlap(k, spans)...)
		for _, s := range spans[1:] {
			if s.PID != spans[0].PID {
				taken++
				break
			}
		}
	}
	c2 := w.verify(t, queue.OutcomeSucceeded, queue.OutcomeLost, queue.OutcomeCancelled, queue.OutcomeFailed)
	t.Logf("%d long tasks, %d of them taken over by another session; %d overlapping executions (%d samples saw two sessions run one body); %s",
		len(longKeys), taken, len(overlaps), samples, c2)
	require.Empty(t, overlaps, "no task's body may run in two sessions at once")
	require.Zero(t, samples, "no sample saw two sessions run one task's body")
	require.Positive(t, taken, "the faults left long tasks to be taken over by another node")
	// Each window is judged in a long run. The brief run's windows are five
	// seconds on a shared machine, where one window's figure is as much the
	// neighbours' load as the nodes'; there the goal holds over all windows.
	if long {
		require.Empty(t, missed, "the nodes not hurt keep %.0f %% of their throughput in every window", 100*partitionGoal)
	}
	keptAll := doneDuring / max(expected, 1)
	t.Logf("over every window the nodes not hurt kept %.0f %% of their throughput; windows under %.0f %%: %v", 100*keptAll, 100*partitionGoal, missed)
	require.GreaterOrEqual(t, keptAll, partitionGoal, "the nodes not hurt keep %.0f %% of their throughput over the windows", 100*partitionGoal)
}

// enqueueLong adds a long ordinary and a long transactional task ahead of
// the backlog (priority 1), each running for d, marked for SessionWatch in
// every batch, and returns their keys (their effects' tags).
func (w *workload) enqueueLong(t *testing.T, d time.Duration) []string {
	t.Helper()
	var tasks []queue.NewTask
	var tags []string
	first := 1
	for i := range 2 {
		transactional := i%2 == 1
		kind := "ord"
		if transactional {
			kind = "tx"
		}
		w.next++
		tag := fmt.Sprintf("%s-long%d", kind, w.next)
		m := testenv.RunMarker(tag)
		tasks = append(tasks, queue.NewTask{Queue: w.queueOf(transactional), Transactional: transactional, MaxAttempts: 1000,
			Priority: &first, Body: fmt.Sprintf("%sINSERT INTO chaos_effect (tag) VALUES ('%s')\nGO\n%s%s",
				m, tag, m, testenv.SleepBody(t, w.Dialect, d))})
		tags = append(tags, tag)
	}
	res, err := w.Store.Enqueue(t.Context(), tasks)
	require.NoError(t, err)
	for i, id := range queue.IDs(res) {
		w.tags[id] = tags[i]
	}
	return tags
}

// held waits (keeping the backlog up) up to a second for node to hold a
// running long task whose body has run for half a second, and says how many
// it holds.
func (w *workload) held(t *testing.T, node string, tags []string, keepBusy func(time.Duration)) int {
	t.Helper()
	want := make(map[string]bool, len(tags))
	for _, tag := range tags {
		want[tag] = true
	}
	var ids []int64
	for id, tag := range w.tags {
		if want[tag] {
			ids = append(ids, id)
		}
	}
	for end := time.Now().Add(time.Second); ; keepBusy(100 * time.Millisecond) {
		var n int
		err := w.db.QueryRowContext(t.Context(), `SELECT count(*) FROM readpast_tasks WHERE id = ANY($1) AND state = 'running'
			AND lease_owner LIKE $2 AND started_at < now() - interval '500 milliseconds'`, ids, node+"/%").Scan(&n)
		require.NoError(t, err)
		if n > 0 || time.Now().After(end) {
			return n
		}
	}
}

// spansOverlap lists the times two sessions ran key's body at once, by the
// sessions' spans (first and last sighting on the server's clock).
func spansOverlap(key string, spans []testenv.Span) []string {
	var out []string
	for i, x := range spans {
		for _, y := range spans[i+1:] {
			if x.PID != y.PID && !y.First.After(x.Last) && !x.First.After(y.Last) {
				out = append(out, fmt.Sprintf("%s: session %d ran it %s–%s and session %d %s–%s", key,
					x.PID, x.First.Format("15:04:05.000"), x.Last.Format("15:04:05.000"),
					y.PID, y.First.Format("15:04:05.000"), y.Last.Format("15:04:05.000")))
			}
		}
	}
	return out
}
