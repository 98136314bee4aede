package sqlserver_test

import (
	"context"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/testenv"
)

// TestFinishDoesNotWaitForAnOpenFinishOfItsQueue: one queue's finishes must
// not queue behind each other on its rollup rows (issue 26, item 4). A finish
// adds to the queue's finished count and to its minute and hour throughput
// rows, and holds them from its UPDATE to its COMMIT, through the log insert
// and the commit's log flush; with one row per key, every finish of a queue
// waited for the one before it to commit. Store.Hold keeps the production
// finish batch of task A open (its rollup rows locked, as a finish between its
// UPDATE and its commit has them), and the finish of task B, of the same queue
// and outcome, must commit at once. The rows are striped by task id, so
// consecutive tasks never meet. Babelfish ignores the lock hints, but the
// PostgreSQL row locks under them block an UPDATE of a row another open
// transaction updated just as SQL Server's do, so the wait shows there too.
// The counts and the throughput series must stay exact after.
func TestFinishDoesNotWaitForAnOpenFinishOfItsQueue(t *testing.T) {
	if os.Getenv(testenv.MSSQLDSNEnv) == "" {
		t.Skip(testenv.MSSQLDSNEnv + " not set: no SQL Server to run on")
	}
	e := testenv.New(t, testenv.SQLServer)
	s := e.Store
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const q = "hot"
	since := time.Now().Add(-time.Minute)

	enq, err := s.Enqueue(ctx, []queue.NewTask{{Queue: q, Body: "SELECT 1"}, {Queue: q, Body: "SELECT 1"}, {Queue: q, Body: "SELECT 1"}})
	require.NoError(t, err)
	tasks, err := s.Claim(ctx, queue.ClaimParams{Queue: q, Owner: "node/w", Limit: 3, LeaseDuration: time.Minute})
	require.NoError(t, err)
	require.Len(t, tasks, 3)
	sort.Slice(tasks, func(i, j int) bool { return tasks[i].ID < tasks[j].ID })
	require.Equal(t, enq[0].ID+2, tasks[2].ID, "the three tasks have consecutive ids, so each has a stripe of its own")
	done := func(task *queue.Task) queue.Attempt {
		now := time.Now()
		return queue.Attempt{Lease: task.Lease(), Outcome: queue.OutcomeSucceeded, Node: "node", Worker: "w",
			StartedAt: now.Add(-10 * time.Millisecond), FinishedAt: now}
	}

	// The queue's first finish makes its rollup rows, as a queue that has
	// run for a while has them.
	_, err = s.Finish(ctx, []queue.Attempt{done(tasks[0])})
	require.NoError(t, err)

	held, err := s.Hold(ctx, queue.HoldOp{Kind: queue.HoldFinish, Attempts: []queue.Attempt{done(tasks[1])}})
	require.NoError(t, err, "holding the finish of task A open")
	t.Cleanup(func() { _ = held.Release(context.Background()) })

	bctx, bcancel := context.WithTimeout(ctx, noWait)
	start := time.Now()
	res, err := s.Finish(bctx, []queue.Attempt{done(tasks[2])})
	elapsed := time.Since(start)
	bcancel()
	require.NoError(t, err, "the finish of task B waited %s for task A's open finish of the same queue: the rollup rows serialise the queue's finishes", elapsed)
	require.Less(t, elapsed, noWait, "the finish of task B waited for task A's open finish of the same queue")
	require.Len(t, res, 1)
	require.NoError(t, res[0].Err)
	t.Logf("task B's finish took %s while task A's finish of the same queue was open", elapsed)

	// A's held finish was rolled back; A finishes for real now.
	require.NoError(t, held.Release(ctx))
	_, err = s.Finish(ctx, []queue.Attempt{done(tasks[1])})
	require.NoError(t, err)

	queues, err := s.Queues(ctx)
	require.NoError(t, err)
	var counts map[queue.State]int64
	for _, qu := range queues {
		if qu.Name == q {
			counts = qu.Counts
		}
	}
	require.Equal(t, int64(3), counts[queue.StateSucceeded], "the finished count sums every stripe: %v", counts)
	for _, span := range []queue.Span{queue.SpanMinute, queue.SpanHour} {
		points, err := s.Throughput(ctx, queue.ThroughputQuery{Span: span, Since: since})
		require.NoError(t, err)
		var n int64
		for _, p := range points {
			if p.Queue == q {
				require.Equal(t, queue.OutcomeSucceeded, p.Outcome)
				n += p.N
			}
		}
		require.Equal(t, int64(3), n, "the %s series sums every stripe: %+v", span, points)
		if span == queue.SpanHour {
			buckets := map[time.Time]int{}
			for _, p := range points {
				if p.Queue == q {
					buckets[p.At]++
				}
			}
			for at, k := range buckets {
				require.Equal(t, 1, k, "the hour bucket %s is one point, its stripes summed", at)
			}
		}
	}
}

// noWait bounds how long task B's finish may take while A's is open. A
// finish that waits on A's rows waits until the test releases them, so any
// bound tells; this one is well above a first batch on a new session of a
// loaded Babelfish (seconds: it compiles the batch), which B's may be.
const noWait = 30 * time.Second
