package web

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/testenv"
)

// After a task ran, /metrics exposes the claim, attempt, task and worker metrics.
func TestMetricsAfterATaskRan(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newAPIEnv(t, apiOpts{dialect: d, tokens: true, node: true})
		task := e.enqueue(testOperatorToken, `{"body":"SELECT 1","queue":"m"}`)
		e.waitState(task.ID, queue.StateSucceeded, 20*time.Second)

		var text string
		require.Eventually(t, func() bool {
			r := e.call("GET", "/metrics", testViewerToken, "")
			require.Equal(t, http.StatusOK, r.status, "%s", r.body)
			text = string(r.body)
			return strings.Contains(text, `readpast_attempts_total{outcome="succeeded",queue="m"} 1`)
		}, 10*time.Second, 50*time.Millisecond, "the attempt must be counted")
		for _, want := range []string{
			`readpast_tasks{queue="m",state="succeeded"} 1`,
			`readpast_tasks{queue="m",state="pending"} 0`,
			`readpast_claims_total{queue="m"}`,
			`readpast_claimed_tasks_total{queue="m"} 1`,
			`readpast_claim_duration_seconds_bucket{queue="m",le=`,
			`readpast_attempt_duration_seconds_count{queue="m"} 1`,
			`readpast_workers_busy{queue="m"} 0`,
			`readpast_workers{queue="m"} 4`,
			`readpast_queue_paused{queue="m"} 0`,
			`readpast_store_up 1`,
			`readpast_build_info{version="test"} 1`,
			`go_goroutines`,
		} {
			require.Contains(t, text, want)
		}
		if d == testenv.SQLServer {
			// Logins per minute: rate() of this counter.
			require.Regexp(t, `readpast_store_sessions_opened_total [1-9]`, text)
		}
	})
}
