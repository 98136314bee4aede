package alerts_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/alerts"
	"readpast/internal/dialect"
	"readpast/internal/jobs"
	"readpast/internal/queue"
	"readpast/internal/target"
	"readpast/internal/testenv"
)

// A job whose run fails, a job whose run runs too long, and a target no
// live node can reach each notify once, filtered by job; a failing job the
// rule does not name, and a target one node still reaches, do not.
func TestJobAndTargetConditions(t *testing.T) {
	e := testenv.New(t, testenv.SQLite)
	rc := startReceiver(t, hookSecret, 0)
	// Two nodes publish their checks of two targets: db1 down from both
	// for a minute, db2 down from one and reached by the other. Both are
	// published before the rules run: a check between the two would see
	// db2 down from every node there is.
	down := func(name string) target.Status {
		return target.Status{Info: target.Info{Name: name, Dialect: dialect.Postgres}, Checked: time.Now(), Since: time.Now().Add(-time.Minute),
			Error: "connecting to 10.0.0.9:5432: connection refused"}
	}
	up := target.Status{Info: target.Info{Name: "db2", Dialect: dialect.Postgres}, Checked: time.Now(), Reachable: true, Since: time.Now().Add(-time.Hour)}
	for node, sts := range map[string][]target.Status{"na": {down("db1"), down("db2")}, "nb": {down("db1"), up}} {
		info, err := json.Marshal(map[string]any{"targets": sts})
		require.NoError(t, err)
		require.NoError(t, e.Store.RegisterNode(e.Ctx, queue.Node{ID: node, Hostname: node, PID: 1}))
		require.NoError(t, e.Store.HeartbeatNode(e.Ctx, node, string(info)))
	}

	runAlerts(t, e.Store, fmt.Sprintf(`{"operators": [{"name": "ops", "webhooks": [{"name": "h", "url": "%s/x", "secret": %q}]}],
		"rules": [{"name": "failed", "kind": "job_failed", "jobs": ["nightly"], "operators": ["ops"]},
		          {"name": "long", "kind": "job_long_running", "threshold": "300ms", "jobs": ["slow"], "operators": ["ops"]},
		          {"name": "down", "kind": "target_unreachable", "threshold": "200ms", "operators": ["ops"]}]}`, rc.URL, hookSecret),
		"n1", &syncBuffer{}, alerts.Options{CheckEvery: 100 * time.Millisecond})

	ed := jobs.Editor{Store: e.Store}
	runStep := func(job string, outcome queue.Outcome) {
		t.Helper()
		_, _, err := ed.Create(e.Ctx, jobs.Definition{Name: job, Queue: job, Steps: []jobs.StepDef{{Name: "only", Body: "SELECT 1"}}}, "alice")
		require.NoError(t, err)
		_, err = ed.Run(e.Ctx, job, "", "alice")
		require.NoError(t, err)
		got, err := e.Store.Claim(e.Ctx, queue.ClaimParams{Queue: job, Owner: "n9/w1", Limit: 1, LeaseDuration: time.Hour})
		require.NoError(t, err)
		require.Len(t, got, 1)
		if outcome != "" {
			_, err = e.Store.Finish(e.Ctx, []queue.Attempt{{Lease: got[0].Lease(), Outcome: outcome, Error: "Msg 208, Level 16: Invalid object name"}})
			require.NoError(t, err)
		}
	}
	runStep("nightly", queue.OutcomeFailed)
	runStep("other", queue.OutcomeFailed) // not in the rule's jobs
	runStep("slow", "")                   // left running

	require.Eventually(t, func() bool { return len(rc.accepted()) == 3 }, 20*time.Second, 20*time.Millisecond)
	time.Sleep(500 * time.Millisecond)
	require.Len(t, rc.accepted(), 3, "each once")
	byRule := map[string]string{}
	for _, m := range rc.messages(t, "/x") {
		byRule[m.Rule] = m.Text
	}
	require.Contains(t, byRule["failed"], "job nightly failed: run 1 ended failed")
	require.NotContains(t, byRule["failed"], "other")
	require.Contains(t, byRule["long"], "job slow: run 3 has been running for")
	require.Contains(t, byRule["down"], "target db1 is unreachable from every node that serves it (2)")
	require.Contains(t, byRule["down"], "connection refused")
	require.False(t, strings.Contains(byRule["down"], "db2"), "db2 is reached by one node")
}

// task_failed rules filtered by job and by target match a job step's task
// that failed on that target, and not a plain task of the same queue.
func TestTaskFailedFiltersByJobAndTarget(t *testing.T) {
	e := testenv.New(t, testenv.SQLite)
	rc := startReceiver(t, hookSecret, 0)
	runAlerts(t, e.Store, fmt.Sprintf(`{"operators": [{"name": "ops", "webhooks": [{"name": "h", "url": "%s/x", "secret": %q}]}],
		"rules": [{"name": "by-job", "kind": "task_failed", "jobs": ["nightly"], "window": "0s", "operators": ["ops"]},
		          {"name": "by-target", "kind": "task_failed", "targets": ["dw"], "window": "0s", "operators": ["ops"]}]}`, rc.URL, hookSecret),
		"n1", &syncBuffer{}, alerts.Options{})
	ed := jobs.Editor{Store: e.Store}
	_, _, err := ed.Create(e.Ctx, jobs.Definition{Name: "nightly", Queue: "etl", Steps: []jobs.StepDef{{Name: "load", Body: "SELECT 1", Target: "dw"}}}, "alice")
	require.NoError(t, err)
	_, err = ed.Run(e.Ctx, "nightly", "", "alice")
	require.NoError(t, err)
	e.Enqueue(t, queue.NewTask{Queue: "etl", Body: "plain", MaxAttempts: 1})
	got, err := e.Store.Claim(e.Ctx, queue.ClaimParams{Queue: "etl", Owner: "n9/w1", Limit: 2, LeaseDuration: time.Hour})
	require.NoError(t, err)
	require.Len(t, got, 2)
	var step int64
	for _, task := range got {
		if task.Target == "dw" {
			step = task.ID
		}
		_, err := e.Store.Finish(e.Ctx, []queue.Attempt{{Lease: task.Lease(), Outcome: queue.OutcomeFailed, Error: "boom"}})
		require.NoError(t, err)
	}
	require.NotZero(t, step, "the step's task runs on its step's target")
	require.Eventually(t, func() bool { return len(rc.accepted()) == 2 }, 20*time.Second, 20*time.Millisecond)
	time.Sleep(500 * time.Millisecond)
	msgs := rc.messages(t, "/x")
	require.Len(t, msgs, 2, "one per rule, for the step's task only")
	for _, m := range msgs {
		require.Contains(t, m.Text, fmt.Sprintf("task %d failed", step), m.Rule)
	}
}
