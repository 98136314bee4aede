package alerts_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/alerts"
	"readpast/internal/queue"
	"readpast/internal/schedule"
	"readpast/internal/testenv"
)

// A schedule no node fires is late (and recovers once a scheduler fires
// it); a fire skipped because the previous run is unfinished notifies
// schedule_skipped.
func TestScheduleLateAndSkipped(t *testing.T) {
	e := testenv.New(t, testenv.SQLite)
	rc := startReceiver(t, hookSecret, 0)
	runAlerts(t, e.Store, fmt.Sprintf(`{"operators": [{"name": "ops", "webhooks": [{"name": "h", "url": "%s/x", "secret": %q}]}],
		"rules": [{"name": "late", "kind": "schedule_late", "threshold": "1s", "recovery": true, "operators": ["ops"]},
		          {"name": "skipped", "kind": "schedule_skipped", "operators": ["ops"]}]}`, rc.URL, hookSecret),
		"n1", &syncBuffer{}, alerts.Options{CheckEvery: 100 * time.Millisecond})
	_, err := schedule.Editor{Store: e.Store}.CreateSchedule(e.Ctx, queue.ScheduleDef{Name: "every-second", Cron: "* * * * * *",
		Task: queue.ScheduleTask{Queue: "nobody-runs-this", Body: "SELECT 1"}}, "test")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(rc.accepted()) == 1 }, 20*time.Second, 20*time.Millisecond)
	m := rc.messages(t, "/x")[0]
	require.Equal(t, "late", m.Rule)
	require.Contains(t, m.Text, "schedule every-second stopped firing")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = schedule.New(e.Store, slog.New(slog.DiscardHandler), schedule.Config{Poll: 50 * time.Millisecond}).Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	require.Eventually(t, func() bool { return len(rc.accepted()) == 3 }, 20*time.Second, 20*time.Millisecond)
	byRule := map[string]alerts.Message{}
	for _, m := range rc.messages(t, "/x")[1:] {
		byRule[m.Rule] = m
	}
	require.Equal(t, "recovered", byRule["late"].State)
	require.Contains(t, byRule["skipped"].Text, "its previous run was still unfinished (overlap skip)")
	time.Sleep(500 * time.Millisecond)
	require.Len(t, rc.accepted(), 3, "skipping on, it notifies once")
}

// A scheduled task that runs k times longer than the median of its
// schedule's last runs is long, whatever the absolute threshold.
func TestLongRunAgainstTheMedianOfPastRuns(t *testing.T) {
	e := testenv.New(t, testenv.SQLite)
	rc := startReceiver(t, hookSecret, 0)
	_, err := schedule.Editor{Store: e.Store}.CreateSchedule(e.Ctx, queue.ScheduleDef{Name: "hourly", Cron: "0 * * * *",
		Task: queue.ScheduleTask{Queue: "etl", Body: "SELECT 1"}}, "test")
	require.NoError(t, err)
	claim := func() *queue.Task {
		_, err := e.Store.RunSchedule(e.Ctx, "hourly", "test", nil)
		require.NoError(t, err)
		got, err := e.Store.Claim(e.Ctx, queue.ClaimParams{Queue: "etl", Owner: "n0/w1", Limit: 1, LeaseDuration: time.Hour})
		require.NoError(t, err)
		require.Len(t, got, 1)
		return got[0]
	}
	for range 3 { // past runs of about 100 ms
		task := claim()
		time.Sleep(100 * time.Millisecond)
		_, err := e.Store.Finish(e.Ctx, []queue.Attempt{{Lease: task.Lease(), Outcome: queue.OutcomeSucceeded}})
		require.NoError(t, err)
	}
	runAlerts(t, e.Store, fmt.Sprintf(`{"operators": [{"name": "ops", "webhooks": [{"name": "h", "url": "%s/x", "secret": %q}]}],
		"rules": [{"name": "slow", "kind": "task_long_running", "threshold": "1h", "median_factor": 5, "operators": ["ops"]}]}`, rc.URL, hookSecret),
		"n1", &syncBuffer{}, alerts.Options{CheckEvery: 100 * time.Millisecond})
	start := time.Now()
	running := claim()
	require.Eventually(t, func() bool { return len(rc.accepted()) == 1 }, 20*time.Second, 20*time.Millisecond)
	require.Greater(t, time.Since(start), 400*time.Millisecond, "not before 5 × the median")
	m := rc.messages(t, "/x")[0]
	require.Contains(t, m.Text, fmt.Sprintf("task %d in queue etl has been running for", running.ID))
	require.Contains(t, m.Text, "5 × the median of schedule hourly's last runs")
}

// A task_failed rule with recovery tells when the failed schedule's next
// run succeeds.
func TestFailedScheduleRecovers(t *testing.T) {
	e := testenv.New(t, testenv.SQLite)
	rc := startReceiver(t, hookSecret, 0)
	_, err := schedule.Editor{Store: e.Store}.CreateSchedule(e.Ctx, queue.ScheduleDef{Name: "nightly", Cron: "0 1 * * *",
		Task: queue.ScheduleTask{Queue: "etl", Body: "EXEC dbo.load", MaxAttempts: 1}}, "test")
	require.NoError(t, err)
	runAlerts(t, e.Store, fmt.Sprintf(`{"operators": [{"name": "ops", "webhooks": [{"name": "h", "url": "%s/x", "secret": %q}]}],
		"rules": [{"name": "nightly", "kind": "task_failed", "schedules": ["nightly"], "window": "0s", "recovery": true, "operators": ["ops"]}]}`, rc.URL, hookSecret),
		"n1", &syncBuffer{}, alerts.Options{CheckEvery: 100 * time.Millisecond})
	run := func(o queue.Outcome) {
		_, err := e.Store.RunSchedule(e.Ctx, "nightly", "test", nil)
		require.NoError(t, err)
		got, err := e.Store.Claim(e.Ctx, queue.ClaimParams{Queue: "etl", Owner: "n0/w1", Limit: 1, LeaseDuration: time.Hour})
		require.NoError(t, err)
		require.Len(t, got, 1)
		_, err = e.Store.Finish(e.Ctx, []queue.Attempt{{Lease: got[0].Lease(), Outcome: o, Error: "Msg 2627, Level 14, State 1, Line 1: duplicate key"}})
		require.NoError(t, err)
	}
	run(queue.OutcomeFailed)
	require.Eventually(t, func() bool { return len(rc.accepted()) == 1 }, 20*time.Second, 20*time.Millisecond)
	time.Sleep(400 * time.Millisecond)
	require.Len(t, rc.accepted(), 1, "no recovery while the failed run is the latest")
	run(queue.OutcomeSucceeded)
	require.Eventually(t, func() bool { return len(rc.accepted()) == 2 }, 20*time.Second, 20*time.Millisecond)
	m := rc.messages(t, "/x")
	require.Equal(t, "firing", m[0].State)
	require.Contains(t, m[0].Title, "(schedule nightly)")
	require.Equal(t, "recovered", m[1].State)
	require.Equal(t, "task_failed", m[1].Kind)
	require.Contains(t, m[1].Text, "schedule nightly ran successfully again")
}
