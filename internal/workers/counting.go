package workers

import (
	"context"
	"sync/atomic"
	"time"

	"readpast/internal/queue"
)

// StoreCalls counts what a node sends to its store: every call that is a round
// trip to the database, and the attempts whose end was recorded (succeeded or
// failed for good). The idle-rate test and `readpast bench` read it.
type StoreCalls struct {
	Calls    atomic.Int64
	Finished atomic.Int64
}

// CountCalls wraps s so that a node using the result counts its calls in the
// returned StoreCalls. A store that wakes nodes (queue.Waker, PostgreSQL's
// LISTEN) keeps doing so through the wrapper: its listening connection sends
// no queries and is not counted.
func CountCalls(s Store) (Store, *StoreCalls) {
	c := &countingStore{Store: s, n: &StoreCalls{}}
	if w, ok := s.(queue.Waker); ok {
		return &countingWaker{countingStore: c, w: w}, c.n
	}
	return c, c.n
}

type countingStore struct {
	Store
	n *StoreCalls
}

type countingWaker struct {
	*countingStore
	w queue.Waker
}

func (c *countingWaker) Listen(ctx context.Context, fn func(queue string)) error {
	return c.w.Listen(ctx, fn)
}

func (c *countingStore) Claim(ctx context.Context, p queue.ClaimParams) ([]*queue.Task, error) {
	c.n.Calls.Add(1)
	return c.Store.Claim(ctx, p)
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
	for _, r := range res {
		if r.Err == nil && (r.State == queue.StateSucceeded || r.State == queue.StateFailed) {
			c.n.Finished.Add(1)
		}
	}
	return res, err
}

func (c *countingStore) Release(ctx context.Context, a []queue.Attempt) ([]queue.FinishResult, error) {
	c.n.Calls.Add(1)
	return c.Store.Release(ctx, a)
}

func (c *countingStore) RunTransactional(ctx context.Context, a queue.Attempt, body string) (queue.FinishResult, error) {
	c.n.Calls.Add(1)
	return c.Store.RunTransactional(ctx, a, body)
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
