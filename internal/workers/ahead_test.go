package workers

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/testenv"
)

// claimLimits records the largest limit a node's claims asked for.
type claimLimits struct {
	Store
	most atomic.Int64
}

func (c *claimLimits) Claim(ctx context.Context, p queue.ClaimParams) ([]*queue.Task, error) {
	for {
		m := c.most.Load()
		if int64(p.Limit) <= m || c.most.CompareAndSwap(m, int64(p.Limit)) {
			break
		}
	}
	return c.Store.Claim(ctx, p)
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

// watchBodies samples the bodies running on n for q until the test ends and
// returns the most it saw.
func watchBodies(t *testing.T, n *Node, q string) func() int {
	var (
		mu   sync.Mutex
		most int
	)
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
			b := bodiesOf(n, q)
			mu.Lock()
			most = max(most, b)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() { close(done); <-stopped })
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return most
	}
}

// Behind a backlog of short bodies a pool claims the tasks its slots will
// start soon, beyond its free slots, and still runs no more bodies at once
// than it has workers; every task runs once.
func TestClaimsAheadBehindABacklogOfShortBodies(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, e env) {
		const workers = 2
		_, err := e.store.UpdateQueue(e.ctx, "ahead", queue.QueueUpdate{Workers: intp(workers), Actor: "test"})
		require.NoError(t, err)
		var tasks []queue.NewTask
		for range 200 {
			tasks = append(tasks, queue.NewTask{Body: "SELECT 1", Queue: "ahead"})
		}
		ids := e.enqueue(t, tasks...)
		rec := &claimLimits{Store: e.store}
		n, err := New(rec, e.target, Config{NodeID: "n1", Poll: 50 * time.Millisecond, Logger: testLogger(t)})
		require.NoError(t, err)
		testenv.StartNode(t, n)
		most := watchBodies(t, n, "ahead")
		for _, id := range ids {
			e.waitState(t, id, queue.StateSucceeded, 30*time.Second)
		}
		require.Greater(t, rec.most.Load(), int64(workers), "a claim behind the backlog takes more than the free slots")
		require.LessOrEqual(t, most(), workers, "no more bodies at once than workers")
		for _, id := range ids {
			recs, err := e.store.TaskAttempts(e.ctx, id)
			require.NoError(t, err)
			require.Len(t, recs, 1, "task %d: one attempt, none given back", id)
			require.Equal(t, queue.OutcomeSucceeded, recs[0].Outcome)
		}
	})
}

// A task claimed ahead behind a body that runs long is given back unstarted
// after Config.AheadWait (1 s here), once: the pool claims nothing ahead while its bodies
// run long, so it does not claim and give back the same task again. An
// operator's cancel of a task claimed ahead ends it without running it.
func TestTaskClaimedAheadOfALongBodyIsGivenBackOnce(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, e env) {
		long := sleepBody(t, e.dialect, 5*time.Second)
		_, err := e.store.UpdateQueue(e.ctx, "behind-long", queue.QueueUpdate{Workers: intp(1), Actor: "test"})
		require.NoError(t, err)
		var tasks []queue.NewTask
		for range 30 {
			tasks = append(tasks, queue.NewTask{Body: "SELECT 1", Queue: "behind-long", Priority: intp(1)})
		}
		tasks = append(tasks, queue.NewTask{Body: long, Queue: "behind-long", Priority: intp(2)},
			queue.NewTask{Body: "SELECT 1", Queue: "behind-long", Priority: intp(3)})
		ids := e.enqueue(t, tasks...)
		longID, nextID := ids[30], ids[31]
		n, _ := e.startNode(t, Config{NodeID: "n1", Poll: 50 * time.Millisecond, AheadWait: time.Second})
		e.waitState(t, longID, queue.StateRunning, 10*time.Second)
		// The short bodies before made the pool claim ahead: the next task is
		// claimed while the long body holds the one slot, and does not run.
		e.waitState(t, nextID, queue.StateRunning, 2*time.Second)
		require.Equal(t, 1, bodiesOf(n, "behind-long"))
		// Given back after a second, pending again, and not claimed
		// ahead again while the long body runs.
		e.waitState(t, nextID, queue.StatePending, 3*time.Second)
		for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			got, err := e.store.Get(e.ctx, nextID)
			require.NoError(t, err)
			require.Equal(t, queue.StatePending, got.State, "claimed ahead again while the long body runs")
		}
		e.waitState(t, longID, queue.StateSucceeded, 15*time.Second)
		e.waitState(t, nextID, queue.StateSucceeded, 10*time.Second)
		recs, err := e.store.TaskAttempts(e.ctx, nextID)
		require.NoError(t, err)
		require.Len(t, recs, 2, "given back once, then run")
		require.Equal(t, queue.OutcomeCancelled, recs[0].Outcome)
		require.Equal(t, errGivenBack.Error(), recs[0].Error)
		require.Equal(t, queue.OutcomeSucceeded, recs[1].Outcome)
	})
}

// A task claimed ahead that an operator cancels ends cancelled without its
// body running; pausing the queue gives the tasks claimed ahead back.
func TestTasksClaimedAheadAreCancelledOrGivenBackUnstarted(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, e env) {
		long := sleepBody(t, e.dialect, 2*time.Second)
		_, err := e.store.UpdateQueue(e.ctx, "ahead-stop", queue.QueueUpdate{Workers: intp(1), Actor: "test"})
		require.NoError(t, err)
		var tasks []queue.NewTask
		for range 30 {
			tasks = append(tasks, queue.NewTask{Body: "SELECT 1", Queue: "ahead-stop", Priority: intp(1)})
		}
		// The body that would show a cancelled task ran anyway: it fails.
		tasks = append(tasks, queue.NewTask{Body: long, Queue: "ahead-stop", Priority: intp(2)},
			queue.NewTask{Body: "SELECT * FROM must_not_run", Queue: "ahead-stop", Priority: intp(3), MaxAttempts: 1})
		ids := e.enqueue(t, tasks...)
		longID, cancelID := ids[30], ids[31]
		// Long enough a wait that the task is still claimed ahead when the
		// test cancels it, however slow the machine.
		n, _ := e.startNode(t, Config{NodeID: "n1", Poll: 50 * time.Millisecond, AheadWait: time.Minute})
		e.waitState(t, longID, queue.StateRunning, 10*time.Second)
		e.waitState(t, cancelID, queue.StateRunning, 2*time.Second)
		_, err = e.store.Cancel(e.ctx, cancelID, "test")
		require.NoError(t, err)
		require.True(t, n.CancelTask(cancelID), "the task claimed ahead is on this node")
		e.waitState(t, cancelID, queue.StateCancelled, 5*time.Second)
		recs, err := e.store.TaskAttempts(e.ctx, cancelID)
		require.NoError(t, err)
		require.Len(t, recs, 1)
		require.Equal(t, queue.OutcomeCancelled, recs[0].Outcome)
		require.NotContains(t, recs[0].Error, "must_not_run", "the body did not run")
		e.waitState(t, longID, queue.StateSucceeded, 10*time.Second)
	})
}

// Pausing gives back what is claimed ahead at once: it is pending, and a
// paused queue starts nothing.
func TestPauseGivesBackTasksClaimedAhead(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, e env) {
		long := sleepBody(t, e.dialect, 3*time.Second)
		_, err := e.store.UpdateQueue(e.ctx, "ahead-pause", queue.QueueUpdate{Workers: intp(1), Actor: "test"})
		require.NoError(t, err)
		var tasks []queue.NewTask
		for range 30 {
			tasks = append(tasks, queue.NewTask{Body: "SELECT 1", Queue: "ahead-pause", Priority: intp(1)})
		}
		tasks = append(tasks, queue.NewTask{Body: long, Queue: "ahead-pause", Priority: intp(2)},
			queue.NewTask{Body: "SELECT 1", Queue: "ahead-pause", Priority: intp(3)})
		ids := e.enqueue(t, tasks...)
		longID, nextID := ids[30], ids[31]
		e.startNode(t, Config{NodeID: "n1", Poll: 50 * time.Millisecond, SettingsEvery: 20 * time.Millisecond, AheadWait: time.Minute})
		e.waitState(t, longID, queue.StateRunning, 10*time.Second)
		e.waitState(t, nextID, queue.StateRunning, 2*time.Second)
		_, err = e.store.UpdateQueue(e.ctx, "ahead-pause", queue.QueueUpdate{Paused: boolp(true), Actor: "test"})
		require.NoError(t, err)
		e.waitState(t, nextID, queue.StatePending, 5*time.Second)
		recs, err := e.store.TaskAttempts(e.ctx, nextID)
		require.NoError(t, err)
		require.Len(t, recs, 1)
		require.Equal(t, queue.OutcomeCancelled, recs[0].Outcome)
		require.True(t, strings.HasPrefix(recs[0].Error, "claimed ahead and given back unstarted"), recs[0].Error)
		require.Equal(t, errPaused.Error(), recs[0].Error, "given back for the pause")
		e.waitState(t, longID, queue.StateSucceeded, 10*time.Second)
		time.Sleep(300 * time.Millisecond)
		got, err := e.store.Get(e.ctx, nextID)
		require.NoError(t, err)
		require.Equal(t, queue.StatePending, got.State, "a paused queue starts nothing")
	})
}

// Once a task claimed ahead is given back for want of a worker, the pool
// claims nothing ahead whatever its size (a pool of 64 would otherwise claim
// one ahead and give it back every second while long bodies run), and a few
// short bodies start it again.
func TestGivingBackStopsClaimingAheadAtAnySize(t *testing.T) {
	for _, size := range []int{1, 8, 64, 500} {
		p := newPool(poolDeps{}, "q")
		p.size, p.backlog, p.bodyAvg = size, true, time.Millisecond
		require.Greater(t, p.free(), size, "size %d: short bodies behind a backlog claim ahead", size)
		p.stopAheadLocked()
		require.Equal(t, size, p.free(), "size %d: nothing ahead after a give-back", size)
		for i := 0; i < 10; i++ {
			p.bodyTookLocked(time.Millisecond)
		}
		require.Greater(t, p.free(), size, "size %d: ten short bodies claim ahead again", size)
	}
}
