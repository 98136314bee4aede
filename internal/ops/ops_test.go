package ops_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/ops"
	"readpast/internal/queue"
	"readpast/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// node records what the operations asked of this process's workers.
type node struct {
	mu        sync.Mutex
	woken     []string
	cancelled []int64
}

func (n *node) Wake(q string) { n.mu.Lock(); n.woken = append(n.woken, q); n.mu.Unlock() }
func (n *node) CancelTask(id int64) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cancelled = append(n.cancelled, id)
	return true
}

// boundedStore is a real store that checks every call it is given has a
// deadline no further away than ops.Timeout.
type boundedStore struct {
	queue.Store
	t *testing.T
}

func (s boundedStore) check(ctx context.Context, call string) {
	s.t.Helper()
	dl, ok := ctx.Deadline()
	require.True(s.t, ok, "%s was called without a deadline", call)
	require.LessOrEqual(s.t, time.Until(dl), ops.Timeout, "%s was called with a deadline beyond ops.Timeout", call)
}

func (s boundedStore) Enqueue(ctx context.Context, ts []queue.NewTask) ([]queue.Enqueued, error) {
	s.check(ctx, "Enqueue")
	return s.Store.Enqueue(ctx, ts)
}

func (s boundedStore) Cancel(ctx context.Context, id int64, actor string) (queue.State, error) {
	s.check(ctx, "Cancel")
	return s.Store.Cancel(ctx, id, actor)
}

func (s boundedStore) Retry(ctx context.Context, id int64, actor string) error {
	s.check(ctx, "Retry")
	return s.Store.Retry(ctx, id, actor)
}

func (s boundedStore) Get(ctx context.Context, id int64) (*queue.Task, error) {
	s.check(ctx, "Get")
	return s.Store.Get(ctx, id)
}

func (s boundedStore) UpdateQueue(ctx context.Context, name string, u queue.QueueUpdate) (*queue.Queue, error) {
	s.check(ctx, "UpdateQueue")
	return s.Store.UpdateQueue(ctx, name, u)
}

func (s boundedStore) SetGroupLimit(ctx context.Context, name string, n int, actor string) error {
	s.check(ctx, "SetGroupLimit")
	return s.Store.SetGroupLimit(ctx, name, n, actor)
}

func (s boundedStore) Groups(ctx context.Context) ([]queue.Group, error) {
	s.check(ctx, "Groups")
	return s.Store.Groups(ctx)
}

func (s boundedStore) CreateSchedule(ctx context.Context, n queue.NewSchedule) error {
	s.check(ctx, "CreateSchedule")
	return s.Store.CreateSchedule(ctx, n)
}

func (s boundedStore) GetSchedule(ctx context.Context, name string) (*queue.Schedule, error) {
	s.check(ctx, "GetSchedule")
	return s.Store.GetSchedule(ctx, name)
}

func (s boundedStore) ReplaceSchedule(ctx context.Context, r queue.ScheduleReplace) (bool, error) {
	s.check(ctx, "ReplaceSchedule")
	return s.Store.ReplaceSchedule(ctx, r)
}

func (s boundedStore) DeleteSchedule(ctx context.Context, name, actor string) error {
	s.check(ctx, "DeleteSchedule")
	return s.Store.DeleteSchedule(ctx, name, actor)
}

func (s boundedStore) RunSchedule(ctx context.Context, name, actor string, fan *queue.FanOutFire) (queue.Enqueued, error) {
	s.check(ctx, "RunSchedule")
	return s.Store.RunSchedule(ctx, name, actor, fan)
}

// Every operation records its actor, bounds its store calls, and tells this
// node's workers what concerns them: an enqueue, a retry or a settings change
// wakes the queue's workers; cancelling a running task stops it here.
func TestOperations(t *testing.T) {
	testenv.ForEachDialect(t, func(t *testing.T, e *testenv.Env) {
		n := &node{}
		o := ops.New(ops.Deps{Store: boundedStore{Store: e.Store, t: t}, Node: n})
		ctx := context.Background() // no deadline: the operations add theirs

		res, err := o.Enqueue(ctx, "operator:ann", []queue.NewTask{
			{Body: "SELECT 1"}, {Body: "SELECT 2", Queue: "etl"}, {Body: "SELECT 3", Queue: "etl", Delay: time.Hour}})
		require.NoError(t, err)
		require.Len(t, res, 3)
		require.Equal(t, []string{"default", "etl"}, n.woken, "each queue's workers are woken once")
		first, err := e.Store.Get(e.Ctx, res[0].ID)
		require.NoError(t, err)
		require.Equal(t, "operator:ann", first.CreatedBy)

		_, err = o.Enqueue(ctx, "operator:ann", []queue.NewTask{{Body: "SELECT 1"}, {Body: " "}})
		require.True(t, queue.IsValidation(err), "a refused task refuses the batch: %v", err)
		require.Len(t, n.woken, 2, "nothing was enqueued, nobody is woken")

		// A pending task is cancelled by the store alone.
		st, err := o.Cancel(ctx, "operator:bob", res[2].ID)
		require.NoError(t, err)
		require.Equal(t, queue.StateCancelled, st)
		require.Empty(t, n.cancelled)
		_, err = o.Cancel(ctx, "operator:bob", res[2].ID)
		require.ErrorIs(t, err, queue.ErrInvalidState)

		// A running task's statement is stopped here.
		claimed, err := e.Store.Claim(e.Ctx, queue.ClaimParams{Queue: "default", Owner: "n/default", Limit: 1, LeaseDuration: time.Minute})
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		st, err = o.Cancel(ctx, "operator:bob", claimed[0].ID)
		require.NoError(t, err)
		require.Equal(t, queue.StateRunning, st, "a running task is asked to stop")
		require.Equal(t, []int64{claimed[0].ID}, n.cancelled)

		retried, err := o.Retry(ctx, "operator:cy", res[2].ID)
		require.NoError(t, err)
		require.Equal(t, queue.StatePending, retried.State)
		require.Equal(t, "etl", n.woken[len(n.woken)-1], "a retry wakes its queue")
		_, err = o.Retry(ctx, "operator:cy", res[1].ID)
		require.ErrorIs(t, err, queue.ErrInvalidState, "a pending task is not retried")

		three := 3
		q, err := o.UpdateQueue(ctx, "operator:dee", "etl", queue.QueueUpdate{Workers: &three, Actor: "ignored"})
		require.NoError(t, err)
		require.Equal(t, "operator:dee", q.UpdatedBy, "the actor is the operation's")
		require.Equal(t, 3, *q.Workers)
		require.Equal(t, "etl", n.woken[len(n.woken)-1], "a settings change wakes the queue")
		bad := -1
		_, err = o.UpdateQueue(ctx, "operator:dee", "etl", queue.QueueUpdate{Workers: &bad})
		require.True(t, queue.IsValidation(err), "%v", err)

		g, err := o.SetGroupLimit(ctx, "operator:eve", "invoices", 2)
		require.NoError(t, err)
		require.Equal(t, queue.Group{Name: "invoices", MaxRunning: 2, UpdatedAt: g.UpdatedAt, UpdatedBy: "operator:eve"}, *g)
		_, err = o.SetGroupLimit(ctx, "operator:eve", "invoices", 0)
		require.True(t, queue.IsValidation(err), "%v", err)
		_, err = o.SetGroupLimit(ctx, "operator:eve", "in\x00voices", 2)
		require.True(t, queue.IsValidation(err), "a name no dialect can store is refused: %v", err)
	})
}
