package web

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/testenv"
)

// A running task's page shows the attempt in progress (its number, the node
// that runs it, its session, since when) rather than "No attempts yet".
func TestTaskPageShowsAttemptInProgress(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newUIEnv(t, uiOpts{dialect: d, node: true})
		id := e.enqueue(queue.NewTask{Queue: "slow", Body: testenv.SleepBody(t, d, 20*time.Second)})[0]
		e.waitState(id, queue.StateRunning, 20*time.Second)
		task, err := e.store.Get(e.ctx, id)
		require.NoError(t, err)

		p := e.get(fmt.Sprintf("/tasks/%d", id))
		require.Equal(t, http.StatusOK, p.status, p.body)
		require.Contains(t, p.body, `class="empty hidden" data-live-empty="logs">No attempts yet.`,
			"a running task has an attempt: the empty note is hidden")
		require.Contains(t, p.body, `class="oc-row-running"`, "the attempt in progress is a row")
		require.Contains(t, p.body, "ui-test-node", "the row names the node that runs it")
		if task.SessionID != "" {
			require.Contains(t, p.body, ">"+task.SessionID+"<", "and its session")
		}
		require.Contains(t, p.body, "in progress")
		_, err = e.store.Cancel(e.ctx, id, "test")
		require.NoError(t, err)
	})
}
