package workers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/resultset"
)

// A queue whose result_rows is set keeps the first rows of its tasks' result
// sets with their attempts; a queue left at the default keeps nothing.
func TestNodeKeepsResultOutputOnlyWhereTheQueueAsks(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, e env) {
		_, err := e.store.UpdateQueue(e.ctx, "kept", queue.QueueUpdate{ResultRows: intPtrOf(5), Actor: "test"})
		require.NoError(t, err)
		e.startNode(t, Config{NodeID: "n1", Poll: 50 * time.Millisecond, TargetIsStore: true})
		body := "SELECT 'hello' AS greeting, NULL AS missing;"
		kept := e.enqueue(t, queue.NewTask{Queue: "kept", Body: body})[0]
		off := e.enqueue(t, queue.NewTask{Queue: "off", Body: body})[0]
		e.waitAll(t, []int64{kept, off}, queue.StateSucceeded, 20*time.Second)

		out, err := e.store.TaskResults(e.ctx, kept)
		require.NoError(t, err)
		require.Len(t, out, 1)
		require.Equal(t, 1, out[0].Attempt)
		o, err := resultset.Decode(out[0].Results)
		require.NoError(t, err)
		require.Equal(t, []string{"greeting", "missing"}, o.Sets[0].Columns)
		require.Equal(t, "hello", *o.Sets[0].Rows[0][0])
		require.Nil(t, o.Sets[0].Rows[0][1])

		// A transactional task on the store keeps its output the same way.
		tx := e.enqueue(t, queue.NewTask{Queue: "kept", Body: body, Transactional: true})[0]
		e.waitState(t, tx, queue.StateSucceeded, 20*time.Second)
		out, err = e.store.TaskResults(e.ctx, tx)
		require.NoError(t, err)
		require.Len(t, out, 1, "the transactional attempt kept its output")
		o, err = resultset.Decode(out[0].Results)
		require.NoError(t, err)
		require.Equal(t, "hello", *o.Sets[0].Rows[0][0])

		none, err := e.store.TaskResults(e.ctx, off)
		require.NoError(t, err)
		require.Empty(t, none, "a queue with result_rows 0 (the default) stores no result output")
	})
}

func intPtrOf(n int) *int { return &n }
