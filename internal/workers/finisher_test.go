package workers

import (
	"cmp"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
)

// writtenLeases is the pool side of a finisher in these tests: it counts the
// leases the finisher says it wrote.
type writtenLeases struct {
	mu   sync.Mutex
	n    int
	done chan struct{}
	want int
}

func (w *writtenLeases) written(leases []queue.Lease) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n += len(leases)
	if w.n == w.want {
		close(w.done)
	}
}

// The finisher writes as many ends in one call as the store takes
// (queue.Capabilities.FinishBatch: 5,000 on PostgreSQL, whose one statement
// costs less per end as the batch grows; 500 on SQLite, 50 on SQL Server):
// ends queued while it was idle go out in one write up to that, never more.
func TestFinisherWritesBatchesAsLargeAsTheStoreTakes(t *testing.T) {
	dialects(t, func(t *testing.T, e env) {
		batchMax := cmp.Or(e.store.Capabilities().FinishBatch, defaultFinishBatch)
		n := batchMax + batchMax/5 // a write more than the store takes
		if batchMax > defaultFinishBatch {
			n = 2*defaultFinishBatch + 200 // more than the default, in one write
		}
		tasks := make([]queue.NewTask, n)
		for i := range tasks {
			tasks[i] = queue.NewTask{Queue: "fb", Body: "SELECT 1"}
		}
		ids := e.enqueue(t, tasks...)
		var leases []queue.Lease
		for len(leases) < n {
			got, err := e.store.Claim(e.ctx, queue.ClaimParams{Queue: "fb", Owner: "n1/fb",
				Limit: queue.MaxClaimLimit, LeaseDuration: time.Minute})
			require.NoError(t, err)
			require.NotEmpty(t, got)
			for _, task := range got {
				leases = append(leases, task.Lease())
			}
		}

		store, calls := CountCalls(e.store)
		f := newFinisher(store, time.Minute, nopObserver{}, testLogger(t))
		require.Equal(t, batchMax, f.batchMax)
		to := &writtenLeases{done: make(chan struct{}), want: n}
		now := time.Now()
		end := func(l queue.Lease) {
			f.submit(queue.Attempt{Lease: l, Outcome: queue.OutcomeSucceeded, Node: "n1", Worker: "fb-w0",
				StartedAt: now, FinishedAt: now}, false, to)
		}
		// What the channel holds is queued before the finisher starts, so its
		// first write takes all of it; the rest follows while it writes.
		queued := min(n, batchMax)
		for _, l := range leases[:queued] {
			end(l)
		}
		f.Start(e.ctx)
		defer f.Stop()
		for _, l := range leases[queued:] {
			end(l)
		}
		select {
		case <-to.done:
		case <-time.After(e.Slower(t, time.Minute)):
			t.Fatalf("the finisher wrote %d of %d ends", calls.FinishedEnds.Load(), n)
		}
		require.EqualValues(t, n, calls.FinishedEnds.Load())
		writes := calls.Finishes.Load()
		if batchMax >= n {
			require.EqualValues(t, 1, writes, "ends queued while the finisher was idle go out in one write")
		} else {
			require.GreaterOrEqual(t, writes, int64((n+batchMax-1)/batchMax), "no write carries more than %d", batchMax)
		}
		e.waitAll(t, ids, queue.StateSucceeded, 10*time.Second)
	})
}
