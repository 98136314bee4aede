package workers

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"readpast/internal/queue"
)

// StoreCalls counts what a node sends to its store: every call that is a round
// trip to the database, and per queue the tasks whose end was recorded as
// succeeded or failed for good. The idle-rate test and `readpast bench` read it.
type StoreCalls struct {
	Calls atomic.Int64
	// The claims and finishes among Calls, and the tasks and attempts they
	// carried: how large the hot path's batches are.
	Claims, ClaimedTasks   atomic.Int64
	Finishes, FinishedEnds atomic.Int64

	mu       sync.Mutex
	queueOf  map[int64]string // claimed and not yet ended
	finished map[string]int64
}

// Finished returns how many tasks of queue q ended for good through the wrapper.
func (c *StoreCalls) Finished(q string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.finished[q]
}

func (c *StoreCalls) claimed(tasks []*queue.Task) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range tasks {
		c.queueOf[t.ID] = t.Queue
	}
}

func (c *StoreCalls) ended(res []queue.FinishResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range res {
		if r.Err != nil {
			// A lost attempt changed nothing, and its answer may come after
			// the task was claimed again: the entry is the new attempt's.
			continue
		}
		if r.State == queue.StateSucceeded || r.State == queue.StateFailed {
			c.finished[c.queueOf[r.TaskID]]++
		}
		delete(c.queueOf, r.TaskID)
	}
}

// CountCalls wraps s so that a node using the result counts its calls in the
// returned StoreCalls. Listen passes through uncounted: the listening
// connection of a store that wakes nodes (PostgreSQL's LISTEN) sends no queries.
func CountCalls(s Store) (Store, *StoreCalls) {
	c := &countingStore{Store: s, n: &StoreCalls{queueOf: map[int64]string{}, finished: map[string]int64{}}}
	return c, c.n
}

type countingStore struct {
	Store
	n *StoreCalls
}

func (c *countingStore) Claim(ctx context.Context, p queue.ClaimParams) ([]*queue.Task, error) {
	c.n.Calls.Add(1)
	tasks, err := c.Store.Claim(ctx, p)
	if err == nil {
		c.n.Claims.Add(1)
		c.n.ClaimedTasks.Add(int64(len(tasks)))
	}
	c.n.claimed(tasks)
	return tasks, err
}

func (c *countingStore) Heartbeat(ctx context.Context, l []queue.Lease, d time.Duration) (queue.HeartbeatResult, error) {
	c.n.Calls.Add(1)
	return c.Store.Heartbeat(ctx, l, d)
}

func (c *countingStore) SetSession(ctx context.Context, l queue.Lease, id string) error {
	c.n.Calls.Add(1)
	return c.Store.SetSession(ctx, l, id)
}

func (c *countingStore) Finish(ctx context.Context, a []queue.Attempt) ([]queue.FinishResult, error) {
	c.n.Calls.Add(1)
	res, err := c.Store.Finish(ctx, a)
	if err == nil {
		c.n.Finishes.Add(1)
		c.n.FinishedEnds.Add(int64(len(a)))
	}
	c.n.ended(res)
	return res, err
}

func (c *countingStore) Release(ctx context.Context, a []queue.Attempt) ([]queue.FinishResult, error) {
	c.n.Calls.Add(1)
	res, err := c.Store.Release(ctx, a)
	c.n.ended(res)
	return res, err
}

func (c *countingStore) RunTransactional(ctx context.Context, a queue.Attempt, body string) (queue.TxResult, error) {
	c.n.Calls.Add(1)
	res, err := c.Store.RunTransactional(ctx, a, body)
	if err == nil && res.Recorded {
		c.n.ended([]queue.FinishResult{res.Finish})
	}
	return res, err
}

func (c *countingStore) ReclaimExpired(ctx context.Context, limit int) ([]queue.FinishResult, error) {
	c.n.Calls.Add(1)
	return c.Store.ReclaimExpired(ctx, limit)
}

func (c *countingStore) QueueSettings(ctx context.Context) ([]queue.Queue, error) {
	c.n.Calls.Add(1)
	return c.Store.QueueSettings(ctx)
}

func (c *countingStore) RegisterNode(ctx context.Context, n queue.Node) error {
	c.n.Calls.Add(1)
	return c.Store.RegisterNode(ctx, n)
}

func (c *countingStore) HeartbeatNode(ctx context.Context, id, info string) error {
	c.n.Calls.Add(1)
	return c.Store.HeartbeatNode(ctx, id, info)
}

func (c *countingStore) StopNode(ctx context.Context, id string) error {
	c.n.Calls.Add(1)
	return c.Store.StopNode(ctx, id)
}
