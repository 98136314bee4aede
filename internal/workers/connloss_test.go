package workers

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/testenv"
	"readpast/internal/testpg"
)

// claimCounter counts Claim calls, and those that failed, on the real store

type claimCounter struct {
	Store
	calls, failed atomic.Int64
}

func (c *claimCounter) Claim(ctx context.Context, p queue.ClaimParams) ([]*queue.Task, error) {
	c.calls.Add(1)
	tasks, err := c.Store.Claim(ctx, p)
	if err != nil {
		c.failed.Add(1)
	}
	return tasks, err
}

// logRecorder keeps the messages of a node's log lines (and passes them on to
// the test log).
type logRecorder struct {
	slog.Handler
	mu   *sync.Mutex
	msgs *[]string
}

func newLogRecorder(t *testing.T) (*slog.Logger, func(msg string) int) {
	r := logRecorder{Handler: testLogger(t).Handler(), mu: &sync.Mutex{}, msgs: &[]string{}}
	count := func(msg string) int {
		r.mu.Lock()
		defer r.mu.Unlock()
		n := 0
		for _, m := range *r.msgs {
			if m == msg {
				n++
			}
		}
		return n
	}
	return slog.New(r), count
}

func (r logRecorder) Handle(ctx context.Context, rec slog.Record) error {
	r.mu.Lock()
	*r.msgs = append(*r.msgs, rec.Message)
	r.mu.Unlock()
	return r.Handler.Handle(ctx, rec)
}

func (r logRecorder) WithAttrs(as []slog.Attr) slog.Handler {
	return logRecorder{Handler: r.Handler.WithAttrs(as), mu: r.mu, msgs: r.msgs}
}

func (r logRecorder) WithGroup(name string) slog.Handler {
	return logRecorder{Handler: r.Handler.WithGroup(name), mu: r.mu, msgs: r.msgs}
}

// A node whose database (store and target) goes away mid-run backs off instead
// of spinning, and once the server is back every task ends succeeded: nothing
// is lost or left running. The server is private: stopping the shared one
// would break the tests running beside this one.
func TestConnectionLossBacksOffAndRecovers(t *testing.T) {
	t.Parallel()
	srv := testpg.Private(t)
	e := newEnv(t, testenv.On(t, testenv.Postgres, srv.NewDatabase(t)))
	// "loss" runs the tasks; "idle" has none, so its pool polls every 50 ms:
	// without a back-off it would claim 60 times in 3 s of outage.
	for _, q := range []string{"loss", "idle"} {
		_, err := e.store.UpdateQueue(e.ctx, q, queue.QueueUpdate{Workers: intp(2), Actor: "test"})
		require.NoError(t, err)
	}
	const total = 60
	tasks := make([]queue.NewTask, total)
	for i := range tasks {
		tasks[i] = queue.NewTask{Body: "SELECT pg_sleep(0.05)", Queue: "loss", MaxAttempts: 5}
	}
	ids := e.enqueue(t, tasks...)
	succeeded := func() int64 { return countState(t, e, "loss", queue.StateSucceeded) }

	cs := &claimCounter{Store: e.store}
	e.store = cs
	logger, logged := newLogRecorder(t)
	// The lease outlasts the outage, so finishes cut off by it are retried
	// until the server is back; a task whose claim was committed but never
	// answered comes back when its lease expires, within seconds.
	e.startNode(t, Config{NodeID: "n1", Poll: 50 * time.Millisecond, Lease: 10 * time.Second,
		ReclaimEvery: 500 * time.Millisecond, Logger: logger})
	require.Eventually(t, func() bool { return succeeded() >= 15 }, 30*time.Second, 10*time.Millisecond)

	require.NoError(t, srv.Stop())
	down := time.Now()
	claimsBefore, failedBefore := cs.calls.Load(), cs.failed.Load()
	const outage = 3 * time.Second
	time.Sleep(outage)
	claims, failed := cs.calls.Load()-claimsBefore, cs.failed.Load()-failedBefore
	require.NoError(t, srv.Start())
	up := time.Now()
	t.Logf("server down for %s: %d claims (%d failed) while it was down", up.Sub(down).Round(time.Millisecond), claims, failed)
	require.Less(t, claims, int64(30), "a node must back off while its database is down, not spin")
	require.Positive(t, failed, "claims were tried and failed while the server was down")
	require.Positive(t, logged("claim failed; backing off"), "the node logs that it backs off")

	require.Eventually(t, func() bool { return succeeded() == total }, 60*time.Second, 50*time.Millisecond,
		"every task succeeds once the server is back")
	t.Logf("all %d tasks succeeded %s after the server came back", total, time.Since(up).Round(time.Millisecond))
	for _, id := range ids {
		task, err := e.store.Get(e.ctx, id)
		require.NoError(t, err)
		require.Equal(t, queue.StateSucceeded, task.State, "task %d", id)
	}
	require.Zero(t, countState(t, e, "loss", queue.StateRunning), "nothing is left running")

	// Every attempt is in the log; those cut off by the outage are failed or lost.
	outcomes := map[queue.Outcome]int{}
	recs, err := cs.Store.Attempts(e.ctx, queue.LogQuery{Queue: "loss", Limit: 1000})
	require.NoError(t, err)
	for _, r := range recs {
		outcomes[r.Outcome]++
	}
	require.Equal(t, total, outcomes[queue.OutcomeSucceeded])
	var parts []string
	for _, o := range []queue.Outcome{queue.OutcomeSucceeded, queue.OutcomeFailed, queue.OutcomeLost, queue.OutcomeTimedOut, queue.OutcomeCancelled} {
		if outcomes[o] > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", o, outcomes[o]))
		}
	}
	t.Logf("attempts: %s", strings.Join(parts, " "))

	// The node's listener is back too.
	require.Eventually(t, func() bool { return listeners(t, e) == 1 }, 10*time.Second, 50*time.Millisecond,
		"the node listens for enqueues again")
}
