package workers

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/testenv"
)

// On SQLite a transactional body holds the one writer for its whole run. With
// twenty long transactional tasks and long ordinary ones running beside them,
// on a short lease, the node keeps its leases (lease time stops while the
// writer is held), runs the transactional tasks one at a time while the others
// wait unclaimed, loses nothing and commits every effect exactly once; and a
// stop with a short grace period stops promptly.
func TestSQLiteTransactionalBodiesDoNotStarveTheNode(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testenv.New(t, testenv.SQLite))
	e.Exec(t, "CREATE TABLE fx (tag varchar(20))")
	var tasks []queue.NewTask
	for i := 0; i < 20; i++ {
		tasks = append(tasks, queue.NewTask{Queue: "w", Transactional: true, MaxAttempts: 1,
			Body: fmt.Sprintf("INSERT INTO fx VALUES ('t%d')\nGO\n%s", i, sleepBody(t, e.dialect, 300*time.Millisecond))})
	}
	for i := 0; i < 4; i++ {
		tasks = append(tasks, queue.NewTask{Queue: "w", MaxAttempts: 1, Body: sleepBody(t, e.dialect, 2*time.Second)})
	}
	ids := e.enqueue(t, tasks...)
	_, err := e.store.UpdateQueue(e.ctx, "w", queue.QueueUpdate{Workers: intp(24), Actor: "t"})
	require.NoError(t, err)
	start := time.Now()
	_, stop := e.startNode(t, Config{NodeID: "n1", Poll: 50 * time.Millisecond, Lease: 900 * time.Millisecond,
		ReclaimEvery: 100 * time.Millisecond, Grace: time.Second, TargetIsStore: true})

	// While they run, at most one transactional task is running at a time.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		running, err := e.store.List(e.ctx, queue.ListParams{Queue: "w", State: queue.StateRunning, Limit: 100})
		require.NoError(t, err)
		tx := 0
		for _, task := range running {
			if task.Transactional {
				tx++
			}
		}
		require.LessOrEqual(t, tx, 1, "transactional tasks run one at a time on SQLite")
		done := 0
		for _, id := range ids {
			if e.get(t, id).State.Finished() {
				done++
			}
		}
		if done == len(ids) {
			break
		}
		require.True(t, time.Now().Before(deadline), "only %d of %d tasks finished in 2 minutes", done, len(ids))
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("20 transactional bodies of 0.3 s and 4 ordinary ones of 2 s ran in %s", time.Since(start).Round(time.Millisecond))
	for i, id := range ids {
		require.Equal(t, queue.StateSucceeded, e.get(t, id).State, "task %d", i)
		recs := requireAttempts(t, e, id, queue.OutcomeSucceeded)
		require.Len(t, recs, 1, "task %d ran once: no lease was lost", i)
	}
	for i := 0; i < 20; i++ {
		require.Equal(t, int64(1), e.QueryInt(t, fmt.Sprintf("SELECT count(*) FROM fx WHERE tag = 't%d'", i)), "effect %d commits exactly once", i)
	}

	// A stop while a long transactional body holds the writer takes about the
	// grace period, not the body's length.
	long := e.enqueue(t, queue.NewTask{Queue: "w", Transactional: true, Body: sleepBody(t, e.dialect, time.Minute)})[0]
	e.waitState(t, long, queue.StateRunning, 10*time.Second)
	began := time.Now()
	stop()
	took := time.Since(began)
	t.Logf("stop with a 1 s grace took %s while a transactional body held the writer", took.Round(time.Millisecond))
	require.Less(t, took, 3*time.Second)
	require.Equal(t, queue.StatePending, e.get(t, long).State, "released to run again")
}

func (e env) get(t *testing.T, id int64) *queue.Task {
	t.Helper()
	task, err := e.store.Get(e.ctx, id)
	require.NoError(t, err)
	return task
}

// On SQLite a transactional body longer than the lease holds the writer while
// ordinary tasks beside it end: their ends wait for the writer, however long,
// and are recorded once it is free. Lease time stops while the writer is held,
// so the ordinary tasks' leases are still theirs; giving their ends up after a
// lease of waiting made tasks that ran to completion on a live node end as
// lost attempts (failed, with one attempt allowed).
func TestSQLiteEndsWaitForALongTransactionalBody(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testenv.New(t, testenv.SQLite))
	e.Exec(t, "CREATE TABLE fx (tag varchar(20))")
	// One claim takes them all: the ordinary tasks first, then the
	// transactional one, which holds the writer for 3 s, more than 3 leases.
	tasks := []queue.NewTask{{Queue: "w", MaxAttempts: 1, Priority: intp(1), Transactional: true,
		Body: "INSERT INTO fx VALUES ('long')\nGO\n" + sleepBody(t, e.dialect, 3*time.Second)}}
	for range 4 {
		tasks = append(tasks, queue.NewTask{Queue: "w", MaxAttempts: 1, Priority: intp(0), Body: sleepBody(t, e.dialect, 300*time.Millisecond)})
	}
	ids := e.enqueue(t, tasks...)
	_, err := e.store.UpdateQueue(e.ctx, "w", queue.QueueUpdate{Workers: intp(8), Actor: "t"})
	require.NoError(t, err)
	e.startNode(t, Config{NodeID: "n1", Poll: 50 * time.Millisecond, Lease: 900 * time.Millisecond,
		ReclaimEvery: 100 * time.Millisecond, TargetIsStore: true})
	for i, id := range ids {
		require.Eventually(t, func() bool { return e.get(t, id).State.Finished() }, time.Minute, 20*time.Millisecond, "task %d finishes", i)
		require.Equal(t, queue.StateSucceeded, e.get(t, id).State, "task %d", i)
		requireAttempts(t, e, id, queue.OutcomeSucceeded)
	}
	require.Equal(t, int64(1), e.QueryInt(t, "SELECT count(*) FROM fx WHERE tag = 'long'"))
}
