package alerts_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/alerts"
	"readpast/internal/queue"
	"readpast/internal/testenv"
)

const (
	smtpUser   = "readpast"
	smtpPass   = "smtp-pass-Sekr1t-9f3a"
	hookSecret = "hook-secret-0123456789abcdef"
)

// syncBuffer is a log sink goroutines share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// runAlerts runs a Runner of cfg on store until the test ends; its log
// goes to logs.
func runAlerts(t *testing.T, store queue.Store, cfg string, node string, logs *syncBuffer, opt alerts.Options) *alerts.Runner {
	t.Helper()
	c, err := alerts.Parse([]byte(cfg))
	require.NoError(t, err)
	opt.Node = node
	if opt.Poll == 0 {
		opt.Poll = 50 * time.Millisecond
	}
	if opt.RetryBase == 0 {
		opt.RetryBase = 100 * time.Millisecond
	}
	opt.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	r := alerts.New(store, c, opt)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

// failTasks enqueues n tasks of queue q with one attempt each and ends
// them failed with errText, as workers do.
func failTasks(t *testing.T, e *testenv.Env, q string, n int, errText string) []int64 {
	t.Helper()
	tasks := make([]queue.NewTask, n)
	for i := range tasks {
		tasks[i] = queue.NewTask{Queue: q, Body: "SELECT 1", MaxAttempts: 1}
	}
	ids := e.Enqueue(t, tasks...)
	for left := n; left > 0; {
		got, err := e.Store.Claim(e.Ctx, queue.ClaimParams{Queue: q, Owner: "n0/w1", Limit: min(left, 100), LeaseDuration: time.Minute})
		require.NoError(t, err)
		require.NotEmpty(t, got)
		at := make([]queue.Attempt, len(got))
		for i, task := range got {
			at[i] = queue.Attempt{Lease: task.Lease(), Outcome: queue.OutcomeFailed, Error: errText, Node: "n0", Worker: "w1"}
		}
		res, err := e.Store.Finish(e.Ctx, at)
		require.NoError(t, err)
		for _, r := range res {
			require.NoError(t, r.Err)
		}
		left -= len(got)
	}
	return ids
}

func smtpConfig(port int, mode, caFile string) string {
	return fmt.Sprintf(`"smtp": {"host": "127.0.0.1", "port": %d, "tls": %q, "username": %q, "password": %q,
		"from": "readpast@example.com", "ca_file": %q}`, port, mode, smtpUser, smtpPass, caFile)
}

func deliveries(t *testing.T, s queue.Store) []queue.AlertDelivery {
	t.Helper()
	ds, err := s.AlertDeliveries(context.Background(), queue.AlertDeliveryQuery{Limit: 1000})
	require.NoError(t, err)
	return ds
}

// A task that fails for good e-mails its operator through a real SMTP
// server, over STARTTLS and over implicit TLS, logged in; a server that
// offers no TLS gets nothing (TLS is mandatory) and the delivery says why.
func TestFailedTaskEmailsItsOperator(t *testing.T) {
	cert, caFile := testCert(t)
	for _, mode := range []string{"starttls", "tls"} {
		t.Run(mode, func(t *testing.T) {
			e := testenv.New(t, testenv.SQLite)
			srv := startSMTP(t, mode, cert, smtpUser, smtpPass)
			logs := &syncBuffer{}
			runAlerts(t, e.Store, `{`+smtpConfig(srv.Port, mode, caFile)+`,
				"operators": [{"name": "dba", "email": ["dba@example.com", "oncall@example.com"]}],
				"rules": [{"name": "etl-failed", "kind": "task_failed", "queues": ["etl"], "operators": ["dba"], "window": "0s"}]}`, "n1", logs, alerts.Options{})
			ids := failTasks(t, e, "etl", 1, "Msg 208, Level 16, State 1, Line 1: Invalid object name 'dbo.missing'.")
			failTasks(t, e, "other", 1, "not watched")
			require.Eventually(t, func() bool { return len(srv.received()) == 1 }, 20*time.Second, 20*time.Millisecond, "logs:\n%s", logs)
			m := srv.received()[0]
			require.True(t, m.TLS, "the message came over TLS")
			require.Equal(t, smtpUser, m.User)
			require.Equal(t, "readpast@example.com", m.From)
			require.ElementsMatch(t, []string{"dba@example.com", "oncall@example.com"}, m.To)
			require.Contains(t, header(m.Data, "Subject"), fmt.Sprintf("task %d failed in queue etl", ids[0]))
			require.Contains(t, m.Data, "Invalid object name 'dbo.missing'.")
			id := header(m.Data, "X-ReadPast-Alert-Id")
			require.True(t, strings.HasPrefix(id, "rp-"), "alert id header %q", id)
			require.Eventually(t, func() bool {
				ds := deliveries(t, e.Store)
				return len(ds) == 1 && ds[0].State == queue.AlertSent && ds[0].Key == id
			}, 10*time.Second, 20*time.Millisecond)
			time.Sleep(300 * time.Millisecond)
			require.Len(t, srv.received(), 1, "sent once")
			require.NotContains(t, logs.String(), smtpPass)
		})
	}
	// With the default digest window, the e-mail comes within the window
	// and a second: well within a minute.
	t.Run("default_window_within_a_minute", func(t *testing.T) {
		e := testenv.New(t, testenv.SQLite)
		srv := startSMTP(t, "starttls", cert, smtpUser, smtpPass)
		runAlerts(t, e.Store, `{`+smtpConfig(srv.Port, "starttls", caFile)+`,
			"operators": [{"name": "dba", "email": ["dba@example.com"]}],
			"rules": [{"name": "all", "kind": "task_failed", "operators": ["dba"]}]}`, "n1", &syncBuffer{}, alerts.Options{Poll: time.Second})
		start := time.Now()
		failTasks(t, e, "nightly", 1, "boom")
		require.Eventually(t, func() bool { return len(srv.received()) == 1 }, time.Minute, 50*time.Millisecond)
		took := time.Since(start)
		t.Logf("the e-mail came %s after the failure", took.Round(time.Millisecond))
		require.Less(t, took, alerts.DefaultWindow+3*time.Second)
	})
	t.Run("refuses_a_server_without_tls", func(t *testing.T) {
		e := testenv.New(t, testenv.SQLite)
		srv := startSMTP(t, "plain", cert, smtpUser, smtpPass)
		logs := &syncBuffer{}
		runAlerts(t, e.Store, `{`+smtpConfig(srv.Port, "starttls", caFile)+`,
			"operators": [{"name": "dba", "email": ["dba@example.com"]}],
			"rules": [{"name": "all", "kind": "task_failed", "operators": ["dba"], "window": "0s"}]}`, "n1", logs, alerts.Options{})
		failTasks(t, e, "etl", 1, "boom")
		require.Eventually(t, func() bool {
			ds := deliveries(t, e.Store)
			return len(ds) == 1 && ds[0].Attempts >= 1 && ds[0].LastError != ""
		}, 20*time.Second, 20*time.Millisecond)
		require.Empty(t, srv.received(), "no message in clear text")
		d := deliveries(t, e.Store)[0]
		require.Equal(t, queue.AlertPending, d.State, "retried later")
		require.Contains(t, strings.ToLower(d.LastError), "tls")
		require.NotContains(t, d.LastError+logs.String(), smtpPass)
	})
}

// A receiver that fails gets the alert again after back-off, and once it
// recovers gets each alert exactly once, signed; plain, Slack and Teams
// payloads.
func TestWebhookFailsThenRecoversAndGetsEachAlertOnce(t *testing.T) {
	testenv.ForEachDialect(t, func(t *testing.T, e *testenv.Env) {
		rc := startReceiver(t, hookSecret, 2)
		logs := &syncBuffer{}
		runAlerts(t, e.Store, fmt.Sprintf(`{"operators": [{"name": "ops", "webhooks": [
				{"name": "plain", "url": "%[1]s/plain", "secret": %[2]q},
				{"name": "slack", "url": "%[1]s/slack", "secret": %[2]q, "format": "slack"},
				{"name": "teams", "url": "%[1]s/teams", "secret": %[2]q, "format": "teams"}]}],
			"rules": [{"name": "any-failure", "kind": "task_failed", "operators": ["ops"], "window": "0s"}]}`, rc.URL, hookSecret),
			"n1", logs, alerts.Options{})
		ids := failTasks(t, e, "etl", 3, "ERROR: deadlock detected (SQLSTATE 40P01)")
		require.Eventually(t, func() bool { return len(rc.accepted()) == 9 }, 60*time.Second, 20*time.Millisecond, "logs:\n%s", logs)
		time.Sleep(500 * time.Millisecond)
		got := rc.accepted()
		require.Len(t, got, 9, "three alerts to three channels, each once")
		seen := map[string]int{}
		for _, h := range got {
			seen[h.AlertID]++
		}
		require.Len(t, seen, 9)
		rc.mu.Lock()
		for id, n := range rc.tries {
			require.Equal(t, 3, n, "alert %s: two refusals, then accepted", id)
		}
		require.Zero(t, rc.badSig)
		rc.mu.Unlock()
		plain := rc.messages(t, "/plain")
		require.Len(t, plain, 3)
		var tasks []string
		for _, m := range plain {
			require.Equal(t, "any-failure", m.Rule)
			require.Equal(t, "firing", m.State)
			require.Equal(t, "task_failed", m.Kind)
			require.Equal(t, 1, m.Count)
			require.Equal(t, "ERROR: deadlock detected (SQLSTATE 40P01)", m.Error)
			tasks = append(tasks, m.Title)
		}
		for _, id := range ids {
			require.Contains(t, strings.Join(tasks, "\n"), fmt.Sprintf("task %d failed in queue etl", id))
		}
		for _, h := range got {
			var v map[string]any
			require.NoError(t, json.Unmarshal(h.Body, &v))
			switch h.Path {
			case "/slack":
				require.Contains(t, v["text"], "failed in queue etl")
			case "/teams":
				require.Equal(t, "message", v["type"])
				require.Contains(t, string(h.Body), "application/vnd.microsoft.card.adaptive")
			}
		}
		for _, d := range deliveries(t, e.Store) {
			require.Equal(t, queue.AlertSent, d.State)
			require.Equal(t, 3, d.Attempts)
			require.Contains(t, d.LastError, "503")
		}
		require.NotContains(t, logs.String(), hookSecret)
	})
}

// waitForWindowStart sleeps until just after a multiple of w, so that a
// burst that lasts less than w falls in one window.
func waitForWindowStart(w time.Duration) {
	time.Sleep(time.Until(time.Now().Truncate(w).Add(w + 50*time.Millisecond)))
}

// 1,000 failures in one window are one digest per channel: "1,000 tasks
// failed in queue etl", with the first error.
func TestStormIsOneDigest(t *testing.T) {
	cert, caFile := testCert(t)
	e := testenv.New(t, testenv.SQLite)
	srv := startSMTP(t, "starttls", cert, smtpUser, smtpPass)
	rc := startReceiver(t, hookSecret, 0)
	logs := &syncBuffer{}
	runAlerts(t, e.Store, fmt.Sprintf(`{%s, "operators": [{"name": "dba", "email": ["dba@example.com"],
			"webhooks": [{"name": "hook", "url": "%s/x", "secret": %q}]}],
		"rules": [{"name": "etl", "kind": "task_failed", "queues": ["etl"], "operators": ["dba"], "window": "30s"}]}`,
		smtpConfig(srv.Port, "starttls", caFile), rc.URL, hookSecret), "n1", logs, alerts.Options{})
	// The burst must fall in one window: it takes about a second, and over
	// ten under the race detector on a busy machine.
	waitForWindowStart(30 * time.Second)
	failTasks(t, e, "etl", 1000, "Msg 1205, Level 13, State 51, Line 1: Transaction was deadlocked")
	require.Eventually(t, func() bool { return len(rc.accepted()) >= 1 && len(srv.received()) >= 1 }, time.Minute, 50*time.Millisecond, "logs:\n%s", logs)
	time.Sleep(time.Second)
	msgs := rc.messages(t, "/x")
	require.Len(t, msgs, 1, "one digest")
	require.Equal(t, 1000, msgs[0].Count)
	require.Equal(t, "1,000 tasks failed in queue etl", msgs[0].Title)
	require.Contains(t, msgs[0].Text, "first error: Msg 1205")
	mails := srv.received()
	require.Len(t, mails, 1)
	require.Contains(t, header(mails[0].Data, "Subject"), "1,000 tasks failed in queue etl")
}

// Error number, severity and SQLSTATE class filters pick the matching
// failures only.
func TestErrorFilters(t *testing.T) {
	e := testenv.New(t, testenv.SQLite)
	rc := startReceiver(t, hookSecret, 0)
	runAlerts(t, e.Store, fmt.Sprintf(`{"operators": [{"name": "ops", "webhooks": [{"name": "h", "url": "%s/x", "secret": %q}]}],
		"rules": [{"name": "deadlocks", "kind": "task_failed", "error_number": 1205, "operators": ["ops"], "window": "0s"},
		          {"name": "severe", "kind": "task_failed", "min_severity": 17, "operators": ["ops"], "window": "0s"},
		          {"name": "pg-txn", "kind": "task_failed", "sqlstate_class": "40", "operators": ["ops"], "window": "0s"}]}`, rc.URL, hookSecret),
		"n1", &syncBuffer{}, alerts.Options{})
	failTasks(t, e, "a", 1, "Msg 1205, Level 13, State 51, Line 1: deadlocked")
	failTasks(t, e, "b", 1, "Msg 823, Level 24, State 2, Line 1: I/O error")
	failTasks(t, e, "c", 1, "ERROR: could not serialize access (SQLSTATE 40001)")
	failTasks(t, e, "d", 1, "Msg 208, Level 16, State 1, Line 1: Invalid object name")
	require.Eventually(t, func() bool { return len(rc.accepted()) == 3 }, 20*time.Second, 20*time.Millisecond)
	time.Sleep(300 * time.Millisecond)
	got := map[string]string{}
	for _, m := range rc.messages(t, "/x") {
		got[m.Rule] = m.Scope
	}
	require.Equal(t, map[string]string{"deadlocks": "queue a", "severe": "queue b", "pg-txn": "queue c"}, got)
}

// A stuck queue notifies once while it stays stuck, and again when it
// recovers.
func TestStuckQueueFiresOnceAndRecovers(t *testing.T) {
	testenv.ForEachDialect(t, func(t *testing.T, e *testenv.Env) {
		rc := startReceiver(t, hookSecret, 0)
		runAlerts(t, e.Store, fmt.Sprintf(`{"operators": [{"name": "ops", "webhooks": [{"name": "h", "url": "%s/x", "secret": %q}]}],
			"rules": [{"name": "stuck", "kind": "queue_stuck", "threshold": "200ms", "recovery": true, "operators": ["ops"]}]}`, rc.URL, hookSecret),
			"n1", &syncBuffer{}, alerts.Options{CheckEvery: 100 * time.Millisecond})
		ids := e.Enqueue(t, queue.NewTask{Queue: "etl", Body: "SELECT 1"})
		require.Eventually(t, func() bool { return len(rc.accepted()) == 1 }, 30*time.Second, 20*time.Millisecond)
		time.Sleep(500 * time.Millisecond)
		require.Len(t, rc.accepted(), 1, "once while it stays stuck")
		m := rc.messages(t, "/x")[0]
		require.Equal(t, "firing", m.State)
		require.Contains(t, m.Text, fmt.Sprintf("queue etl is stuck: its oldest pending task %d has waited", ids[0]))
		got, err := e.Store.Claim(e.Ctx, queue.ClaimParams{Queue: "etl", Owner: "n0/w1", Limit: 1, LeaseDuration: time.Minute})
		require.NoError(t, err)
		_, err = e.Store.Finish(e.Ctx, []queue.Attempt{{Lease: got[0].Lease(), Outcome: queue.OutcomeSucceeded}})
		require.NoError(t, err)
		require.Eventually(t, func() bool { return len(rc.accepted()) == 2 }, 30*time.Second, 20*time.Millisecond)
		r := rc.messages(t, "/x")[1]
		require.Equal(t, "recovered", r.State)
		require.Equal(t, "queue_stuck", r.Kind)
		conds, err := e.Store.AlertConditions(e.Ctx)
		require.NoError(t, err)
		require.Empty(t, conds)
	})
}

// Send a test writes one delivery per channel, audited, and it arrives.
func TestSendTest(t *testing.T) {
	e := testenv.New(t, testenv.SQLite)
	rc := startReceiver(t, hookSecret, 0)
	r := runAlerts(t, e.Store, fmt.Sprintf(`{"operators": [{"name": "ops", "webhooks": [{"name": "h", "url": "%s/x", "secret": %q}]}], "rules": []}`,
		rc.URL, hookSecret), "n1", &syncBuffer{}, alerts.Options{})
	require.NoError(t, r.SendTest(e.Ctx, "ops", "operator:ann"))
	var ve *queue.ValidationError
	require.ErrorAs(t, r.SendTest(e.Ctx, "nobody", "operator:ann"), &ve)
	require.Eventually(t, func() bool { return len(rc.accepted()) == 1 }, 20*time.Second, 20*time.Millisecond)
	require.Equal(t, "test", rc.messages(t, "/x")[0].State)
	audit, err := e.Store.Audit(e.Ctx, queue.AuditQuery{})
	require.NoError(t, err)
	require.Equal(t, "operator:ann send_test_alert operator ops webhook:h", audit[0].Actor+" "+audit[0].Action+" "+audit[0].Target+" "+audit[0].Detail)
}
