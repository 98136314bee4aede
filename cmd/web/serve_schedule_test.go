package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/testenv"
)

// A served node runs a scheduler: a schedule created through the API fires
// every second and the node's workers run each fire's task, though the node
// polls only once an hour (the API wakes the scheduler, and each fire wakes
// the workers). The scheduler stops before the workers drain.
func TestServeFiresSchedules(t *testing.T) {
	t.Parallel()
	testenv.ForEachDialect(t, func(t *testing.T, e *testenv.Env) {
		srv := startServe(t, e.DSN, "--poll", "1h", "--grace", "1s")

		req, err := http.NewRequest("POST", "http://"+srv.addr+"/api/schedules", strings.NewReader(
			`{"name":"tick","cron":"* * * * * *","queue":"ticks","body":"SELECT 1","overlap":"allow"}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusCreated, res.StatusCode)

		var runs []*queue.Task
		require.Eventually(t, func() bool {
			runs, err = e.Store.List(e.Ctx, queue.ListParams{Schedule: "tick", State: queue.StateSucceeded})
			return err == nil && len(runs) >= 3
		}, 30*time.Second, 50*time.Millisecond, "the node fires the schedule and runs its tasks; logs:\n%s", srv.logs.String())
		fired := map[time.Time]bool{}
		for _, r := range runs {
			require.Equal(t, "schedule:tick", r.CreatedBy)
			require.Equal(t, "ticks", r.Queue)
			require.False(t, fired[r.FireAt], "fire time %s ran once", r.FireAt)
			fired[r.FireAt] = true
		}

		require.Equal(t, 0, srv.stop(), "logs:\n%s", srv.logs.String())
		logs := srv.logs.String()
		stopped, nodeStopped := strings.Index(logs, "scheduler stopped"), strings.Index(logs, "node stopped")
		require.Positive(t, stopped, "the scheduler stops with the node")
		require.Less(t, stopped, nodeStopped, "the scheduler stops before the workers drain")
	})
}
