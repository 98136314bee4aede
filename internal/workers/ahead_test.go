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
		n, err := New(rec, e.target, Config{NodeID: "n1", Poll: 50 * time.Millisecond, AheadFor: aheadFor, Logger: testLogger(t)})
		require.NoError(t, err)
		testenv.StartNode(t, n)
		most := watchBodies(t, n, "ahead")
		e.waitAll(t, ids, queue.StateSucceeded, 30*time.Second)
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

// claimedAheadOfALongBody sets up queue q of aheadWorkers workers with 30
// short bodies (so the pool claims ahead), then as many bodies that run for
// long, then next; it starts a node with cfg and returns once the long bodies
// hold every slot and next is claimed ahead, waiting for one.
func claimedAheadOfALongBody(t *testing.T, e env, q string, long time.Duration, next queue.NewTask, cfg Config) (n *Node, stop func(), longIDs []int64, nextID int64) {
	t.Helper()
	body := sleepBody(t, e.dialect, long)
	_, err := e.store.UpdateQueue(e.ctx, q, queue.QueueUpdate{Workers: intp(aheadWorkers), Actor: "test"})
	require.NoError(t, err)
	var tasks []queue.NewTask
	for range 30 {
		tasks = append(tasks, queue.NewTask{Body: "SELECT 1", Queue: q, Priority: intp(1)})
	}
	for range aheadWorkers {
		tasks = append(tasks, queue.NewTask{Body: body, Queue: q, Priority: intp(2)})
	}
	next.Queue, next.Priority = q, intp(3)
	ids := e.enqueue(t, append(tasks, next)...)
	longIDs, nextID = ids[30:30+aheadWorkers], ids[30+aheadWorkers]
	cfg.NodeID, cfg.Poll, cfg.AheadFor = "n1", 50*time.Millisecond, aheadFor
	n, stop = e.startNode(t, cfg)
	// The short bodies all ended: every slot is a long body's, not a long
	// task claimed ahead behind a short body still running.
	e.waitAll(t, ids[:30], queue.StateSucceeded, 10*time.Second)
	for _, id := range longIDs {
		e.waitState(t, id, queue.StateRunning, 10*time.Second)
	}
	e.waitState(t, nextID, queue.StateRunning, 2*time.Second)
	require.Equal(t, aheadWorkers, bodiesOf(n, q), "the task claimed ahead does not run")
	return n, stop, longIDs, nextID
}

// aheadWorkers: the slots of the pools these tests claim ahead in.
const aheadWorkers = 4

// aheadFor: claim ahead for a second of bodies, so that the short bodies of
// these tests make the pool claim ahead however slow the machine runs them
// (the race detector and SQLite's new connection can take tens of
// milliseconds a body, and a pool of 4 claims ahead only while 4 × the
// default 250 ms covers a body).
const aheadFor = time.Second

// A task claimed ahead behind a body that runs long is given back unstarted
// after Config.AheadWait (1 s here), once: the pool claims nothing ahead
// while its bodies run long, so it does not claim and give back the same task
// again.
func TestTaskClaimedAheadOfALongBodyIsGivenBackOnce(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, e env) {
		_, _, longIDs, nextID := claimedAheadOfALongBody(t, e, "behind-long", 5*time.Second,
			queue.NewTask{Body: "SELECT 1"}, Config{AheadWait: time.Second})
		// Given back after a second, pending again, and not claimed
		// ahead again while the long body runs.
		e.waitState(t, nextID, queue.StatePending, 3*time.Second)
		for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			got, err := e.store.Get(e.ctx, nextID)
			require.NoError(t, err)
			require.Equal(t, queue.StatePending, got.State, "claimed ahead again while the long body runs")
		}
		e.waitAll(t, longIDs, queue.StateSucceeded, 15*time.Second)
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
// body running.
func TestCancelledTaskClaimedAheadEndsUnstarted(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, e env) {
		// Its body would fail (no such table), so its one attempt shows
		// whether it ran. A wait long enough that the task is still claimed
		// ahead when the test cancels it, however slow the machine.
		n, _, longIDs, cancelID := claimedAheadOfALongBody(t, e, "ahead-stop", 2*time.Second,
			queue.NewTask{Body: "SELECT * FROM must_not_run", MaxAttempts: 1}, Config{AheadWait: time.Minute})
		_, err := e.store.Cancel(e.ctx, cancelID, "test")
		require.NoError(t, err)
		require.True(t, n.CancelTask(cancelID), "the task claimed ahead is on this node")
		e.waitState(t, cancelID, queue.StateCancelled, 5*time.Second)
		recs, err := e.store.TaskAttempts(e.ctx, cancelID)
		require.NoError(t, err)
		require.Len(t, recs, 1)
		require.Equal(t, queue.OutcomeCancelled, recs[0].Outcome)
		require.NotContains(t, recs[0].Error, "must_not_run", "the body did not run")
		e.waitAll(t, longIDs, queue.StateSucceeded, 10*time.Second)
	})
}

// Pausing the queue, or setting its workers to 0, gives back what is claimed
// ahead at once: it is pending, and the stopped queue starts nothing.
func TestPauseGivesBackTasksClaimedAhead(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, e env) {
		for _, stop := range []struct {
			name   string
			update queue.QueueUpdate
		}{
			{"ahead-pause", queue.QueueUpdate{Paused: boolp(true), Actor: "test"}},
			{"ahead-zero", queue.QueueUpdate{Workers: intp(0), Actor: "test"}},
		} {
			t.Run(stop.name, func(t *testing.T) {
				_, _, longIDs, nextID := claimedAheadOfALongBody(t, e, stop.name, 3*time.Second,
					queue.NewTask{Body: "SELECT 1"}, Config{SettingsEvery: 20 * time.Millisecond, AheadWait: time.Minute})
				_, err := e.store.UpdateQueue(e.ctx, stop.name, stop.update)
				require.NoError(t, err)
				e.waitState(t, nextID, queue.StatePending, 5*time.Second)
				recs, err := e.store.TaskAttempts(e.ctx, nextID)
				require.NoError(t, err)
				require.Len(t, recs, 1)
				require.Equal(t, queue.OutcomeCancelled, recs[0].Outcome)
				require.True(t, strings.HasPrefix(recs[0].Error, GivenBackPrefix), recs[0].Error)
				require.Equal(t, errPaused.Error(), recs[0].Error, "given back for the pause")
				e.waitAll(t, longIDs, queue.StateSucceeded, 10*time.Second)
				time.Sleep(300 * time.Millisecond)
				got, err := e.store.Get(e.ctx, nextID)
				require.NoError(t, err)
				require.Equal(t, queue.StatePending, got.State, "a paused queue starts nothing")
			})
		}
	})
}

// A node that stops gives back what it claimed ahead at once, released to
// run elsewhere, while its running bodies finish within the grace.
func TestShutdownGivesBackTasksClaimedAheadAtOnce(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, e env) {
		_, stop, longIDs, nextID := claimedAheadOfALongBody(t, e, "ahead-shutdown", 3*time.Second,
			queue.NewTask{Body: "SELECT 1"}, Config{AheadWait: time.Minute})
		stopped := make(chan struct{})
		go func() { defer close(stopped); stop() }()
		e.waitState(t, nextID, queue.StatePending, 2*time.Second)
		recs, err := e.store.TaskAttempts(e.ctx, nextID)
		require.NoError(t, err)
		require.Len(t, recs, 1)
		require.Equal(t, queue.OutcomeCancelled, recs[0].Outcome)
		require.Equal(t, errShutdown.Error(), recs[0].Error)
		for _, id := range longIDs {
			got, err := e.store.Get(e.ctx, id)
			require.NoError(t, err)
			require.Equal(t, queue.StateRunning, got.State, "the long bodies still run in the grace")
		}
		<-stopped
		e.waitAll(t, longIDs, queue.StateSucceeded, time.Second)
	})
}

// Once a task claimed ahead is given back for want of a worker, the pool
// claims nothing ahead whatever its size (a pool of 64 would otherwise claim
// one ahead and give it back every second while long bodies run), and a few
// short bodies start it again.
func TestGivingBackStopsClaimingAheadAtAnySize(t *testing.T) {
	for _, size := range []int{1, 8, 64, 500} {
		p := newPool(poolDeps{aheadFor: 20 * time.Millisecond, maxEnding: 10}, "q")
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

// A pool whose ended tasks awaiting their record reach maxEnding claims
// nothing, whatever room its slots have, until the finisher writes them.
func TestPoolStopsClaimingWhileItsEndsAwaitTheirRecord(t *testing.T) {
	const maxEnding = 10
	p := newPool(poolDeps{aheadFor: 20 * time.Millisecond, maxEnding: maxEnding}, "q")
	p.size = 4
	for i := range maxEnding {
		p.ending[queue.Lease{TaskID: int64(i + 1), Token: 1}] = struct{}{}
	}
	require.Zero(t, p.free())
	p.written([]queue.Lease{{TaskID: 1, Token: 1}})
	require.Equal(t, 4, p.free())
}

// Behind short bodies a pool claims ahead up to aheadPerSlot a slot, but never
// more than its store records in two finish batches (maxEnding): a store that
// records ends one transaction each (SQL Server's, batches of 50) holds 100
// tasks ahead, not 2,048 that every heartbeat would extend.
func TestClaimsAheadNoMoreThanTwoFinishBatches(t *testing.T) {
	for _, c := range []struct{ maxEnding, ahead int }{{100, 100}, {1000, 1000}, {10000, 32 * 64}} {
		p := newPool(poolDeps{aheadFor: 250 * time.Millisecond, maxEnding: c.maxEnding}, "q")
		p.size, p.backlog, p.bodyAvg = 64, true, time.Millisecond
		require.Equal(t, 64+c.ahead, p.free(), "maxEnding %d", c.maxEnding)
	}
}
