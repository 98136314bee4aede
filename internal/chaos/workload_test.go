package chaos

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite" // the "sqlite" driver

	"readpast/internal/queue"
	"readpast/internal/testenv"
	"readpast/internal/workers"
)

// database is one test database: its migrated store, as the test reads and
// enqueues through it, and a connection pool of the test's own for the
// effects table the task bodies write. Calls take t.Context(), not the Env's
// context, whose five minutes a long run outlasts.
type database struct {
	*testenv.Env
	db *sql.DB
}

// newSQLite makes a fresh SQLite file.
func newSQLite(t *testing.T) database {
	t.Helper()
	path := filepath.Join(t.TempDir(), "chaos.db")
	db, err := sql.Open("sqlite", "file:"+strings.ReplaceAll(url.PathEscape(path), "%2F", "/")+"?_pragma=busy_timeout(10000)")
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return database{Env: testenv.On(t, testenv.SQLite, "sqlite://"+path), db: db}
}

// newPostgres makes a fresh database at dsn (a new database of a test server).
func newPostgres(t *testing.T, dsn string) database {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return database{Env: testenv.On(t, testenv.Postgres, dsn), db: db}
}

// shape is one wave of the workload: transactional tasks, whose effect must
// commit exactly once, and ordinary ones, whose effect may repeat only for an
// attempt that did not succeed; each body writes its effect, then sleeps a
// random time in its range, so a kill finds effects written and not committed.
type shape struct {
	tx, ordinary           int
	txSleep, ordinarySleep [2]time.Duration
}

func (s shape) size() int { return s.tx + s.ordinary }

// workload is the tasks of one run and the effect each one writes.
type workload struct {
	database
	queue string
	// txQueue is the queue of the transactional tasks when it is not queue:
	// the partition test runs them on the nodes whose target is the store only.
	txQueue string
	tags    map[int64]string // task id → its effect's tag: tx-N or ord-N
	next    int
}

func newWorkload(t *testing.T, d database, queueName string) *workload {
	t.Helper()
	d.Exec(t, "CREATE TABLE chaos_effect (tag varchar(40) NOT NULL)")
	return &workload{database: d, queue: queueName, tags: map[int64]string{}}
}

// enqueue adds one wave, in a random order of kinds.
func (w *workload) enqueue(t *testing.T, s shape) {
	t.Helper()
	var tasks []queue.NewTask
	var tags []string
	add := func(kind string, n int, sleep [2]time.Duration, transactional bool) {
		for range n {
			w.next++
			tag := fmt.Sprintf("%s-%d", kind, w.next)
			d := sleep[0] + rand.N(sleep[1]-sleep[0]+1)
			tasks = append(tasks, queue.NewTask{Queue: w.queueOf(transactional), Transactional: transactional, MaxAttempts: 1000,
				Body: fmt.Sprintf("INSERT INTO chaos_effect (tag) VALUES ('%s')\nGO\n%s", tag, testenv.SleepBody(t, w.Dialect, d))})
			tags = append(tags, tag)
		}
	}
	add("tx", s.tx, s.txSleep, true)
	add("ord", s.ordinary, s.ordinarySleep, false)
	rand.Shuffle(len(tasks), func(i, j int) { tasks[i], tasks[j] = tasks[j], tasks[i]; tags[i], tags[j] = tags[j], tags[i] })
	res, err := w.Store.Enqueue(t.Context(), tasks)
	require.NoError(t, err, "enqueueing a wave of %d tasks", len(tasks))
	for i, id := range queue.IDs(res) {
		w.tags[id] = tags[i]
	}
}

// queueOf is the queue of a task of the workload.
func (w *workload) queueOf(transactional bool) string {
	if transactional && w.txQueue != "" {
		return w.txQueue
	}
	return w.queue
}

// queues are the workload's queues.
func (w *workload) queues() []string {
	if w.txQueue == "" || w.txQueue == w.queue {
		return []string{w.queue}
	}
	return []string{w.queue, w.txQueue}
}

// pending counts the workload's tasks waiting to be claimed; ok is false
// when the store could not say.
func (w *workload) pending() (n int64, ok bool) {
	for _, q := range w.queues() {
		c, err := queueCounts(w.Store, q)
		if err != nil {
			return 0, false
		}
		n += c[queue.StatePending]
	}
	return n, true
}

// topUp adds tasks to every queue of the workload whose pending tasks fell
// under half of what a wave s adds to it: a wave of that queue's kind. Each
// queue is kept up on its own, since the nodes may drain one faster than the
// other (the partition test's ordinary queue, which more nodes run): topped
// up by their sum, that queue ran dry behind the other's backlog, and the
// nodes that run only it waited for work (docs/RELIABILITY.md).
func (w *workload) topUp(t *testing.T, s shape) {
	t.Helper()
	if w.txQueue == "" || w.txQueue == w.queue {
		if left, ok := w.pending(); ok && left < int64(s.size()/2) {
			w.enqueue(t, s)
		}
		return
	}
	low := func(q string, wave int) bool {
		c, err := queueCounts(w.Store, q)
		return err == nil && c[queue.StatePending] < int64(wave/2)
	}
	var add shape
	if low(w.txQueue, s.tx) {
		add.tx, add.txSleep = s.tx, s.txSleep
	}
	if low(w.queue, s.ordinary) {
		add.ordinary, add.ordinarySleep = s.ordinary, s.ordinarySleep
	}
	if add.size() > 0 {
		w.enqueue(t, add)
	}
}

// unfinished counts the workload's tasks not yet finished; ok is false when
// the store could not say (a fault test's server may be down).
func (w *workload) unfinished() (n int64, ok bool) {
	for _, q := range w.queues() {
		c, err := queueCounts(w.Store, q)
		if err != nil {
			return 0, false
		}
		n += c[queue.StatePending] + c[queue.StateRunning]
	}
	return n, true
}

// waitDrained waits until every task of the workload has finished, failing
// the test if some are still unfinished within d.
func (w *workload) waitDrained(t *testing.T, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		left, ok := w.unfinished()
		require.True(t, ok, "reading the queue's counts")
		if left == 0 {
			return
		}
		require.True(t, time.Now().Before(deadline), "%d tasks still unfinished after %s", left, d)
		time.Sleep(200 * time.Millisecond)
	}
}

// queueCounts reads how many tasks of queue q are in each state.
func queueCounts(s queue.Store, q string) (map[queue.State]int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	qs, err := s.Queues(ctx)
	if err != nil {
		return nil, err
	}
	for _, x := range qs {
		if x.Name == q {
			return x.Counts, nil
		}
	}
	return nil, nil
}

// tally is what a run did, as the checks found it.
type tally struct {
	tasks     int
	attempts  map[queue.Outcome]int
	givenBack int // attempts of tasks claimed ahead and given back unstarted
	repeats   int // effects of ordinary tasks written more than once
}

func (c tally) String() string {
	var parts []string
	for _, o := range []queue.Outcome{queue.OutcomeSucceeded, queue.OutcomeFailed, queue.OutcomeLost, queue.OutcomeTimedOut, queue.OutcomeCancelled} {
		if c.attempts[o] > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", o, c.attempts[o]))
		}
	}
	return fmt.Sprintf("%d tasks, attempts %s, %d given back unstarted, %d repeated effects of ordinary tasks",
		c.tasks, strings.Join(parts, " "), c.givenBack, c.repeats)
}

// verify checks the run lost nothing and did nothing twice that it may not
// have: every task succeeded, with exactly one succeeded attempt and no other
// outcome than allowed; a transactional task's effect is there exactly once;
// an ordinary task's effect is there at least once and repeats at most once
// per attempt of it that did not succeed.
//
// An attempt of a task claimed ahead and given back unstarted is allowed in
// any run and can have no effect: its body never started (docs/WORKERS.md,
// "claiming ahead"; logged cancelled with the reason). It happens when no
// slot frees within AheadWait, as when bodies wait that long for SQLite's
// writer behind nodes killed and restarted on a loaded machine.
func (w *workload) verify(t *testing.T, allowed ...queue.Outcome) tally {
	t.Helper()
	c := tally{attempts: map[queue.Outcome]int{}}
	var tasks []*queue.Task
	attempts := map[int64][]queue.AttemptRecord{}
	for _, q := range w.queues() {
		qt, qa := readQueue(t, w.database, q)
		tasks = append(tasks, qt...)
		maps.Copy(attempts, qa)
	}
	require.Len(t, tasks, len(w.tags), "every task enqueued is in the store")
	for _, task := range tasks {
		require.Equal(t, queue.StateSucceeded, task.State, "task %d (%s) ended %s: %s", task.ID, w.tags[task.ID], task.State, task.LastError)
	}
	c.tasks = len(tasks)

	succeeded, notSucceeded := map[int64]int{}, map[int64]int{}
	for id, recs := range attempts {
		for _, r := range recs {
			if givenBack(r) {
				c.givenBack++
				continue
			}
			c.attempts[r.Outcome]++
			require.Contains(t, allowed, r.Outcome, "task %d (%s) attempt %d ended %s on %s: %s", id, w.tags[id], r.Attempt, r.Outcome, r.Node, r.Error)
			if r.Outcome == queue.OutcomeSucceeded {
				succeeded[id]++
			} else {
				notSucceeded[id]++
			}
		}
	}

	effects := w.effects(t)
	for _, id := range slices.Sorted(maps.Keys(w.tags)) {
		tag := w.tags[id]
		require.Equal(t, 1, succeeded[id], "task %d (%s) has exactly one succeeded attempt", id, tag)
		n := effects[tag]
		if strings.HasPrefix(tag, "tx-") {
			require.Equal(t, 1, n, "the effect of transactional task %d (%s) commits exactly once", id, tag)
			continue
		}
		require.GreaterOrEqual(t, n, 1, "the effect of ordinary task %d (%s) is there", id, tag)
		require.LessOrEqual(t, n-1, notSucceeded[id], "each repeat of ordinary task %d (%s)'s effect matches an attempt that did not succeed", id, tag)
		c.repeats += n - 1
	}
	require.Len(t, effects, len(w.tags), "no effect without its task")
	return c
}

// readQueue returns the queue's tasks and each one's attempts, oldest first.
func readQueue(t *testing.T, db database, q string) ([]*queue.Task, map[int64][]queue.AttemptRecord) {
	t.Helper()
	var tasks []*queue.Task
	for before := int64(0); ; {
		page, err := db.Store.List(t.Context(), queue.ListParams{Queue: q, Before: before, Limit: 1000})
		require.NoError(t, err)
		tasks = append(tasks, page...)
		if len(page) < 1000 {
			break
		}
		before = page[len(page)-1].ID
	}
	attempts := map[int64][]queue.AttemptRecord{}
	for before := int64(0); ; {
		page, err := db.Store.Attempts(t.Context(), queue.LogQuery{Queue: q, Before: before, Limit: 10000})
		require.NoError(t, err)
		for _, r := range page {
			attempts[r.TaskID] = append(attempts[r.TaskID], r)
		}
		if len(page) < 10000 {
			break
		}
		before = page[len(page)-1].ID
	}
	for _, recs := range attempts {
		slices.SortFunc(recs, func(a, b queue.AttemptRecord) int { return a.Attempt - b.Attempt })
	}
	return tasks, attempts
}

// effects counts the effect rows per tag.
func (w *workload) effects(t *testing.T) map[string]int {
	t.Helper()
	rows, err := w.db.QueryContext(t.Context(), "SELECT tag, count(*) FROM chaos_effect GROUP BY tag")
	require.NoError(t, err)
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var tag string
		var n int
		require.NoError(t, rows.Scan(&tag, &n))
		out[tag] = n
	}
	require.NoError(t, rows.Err())
	return out
}

// givenBack says r is the attempt of a task claimed ahead and given back
// unstarted.
func givenBack(r queue.AttemptRecord) bool {
	return r.Outcome == queue.OutcomeCancelled && strings.HasPrefix(r.Error, workers.GivenBackPrefix)
}
