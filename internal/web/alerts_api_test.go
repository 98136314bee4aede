package web

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/alerts"
	"readpast/internal/queue"
	"readpast/internal/testenv"
	"readpast/internal/web/api"
)

const (
	alertSMTPPassword = "smtp-Pa55-never-shown"
	alertHookSecret   = "hook-secret-never-shown-0123"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// The Alerts API and page: the configuration by names only, a test sent by
// an operator (audited) reaching the webhook, deliveries with their state
// and last error; no secret (SMTP password, webhook secret or URL token)
// appears in any answer, page or log line.
func TestAlertsAPIAndPageShowNoSecret(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got [][]byte
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, b)
		mu.Unlock()
	}))
	t.Cleanup(hook.Close)
	hookURL := hook.URL + "/services/T0KEN-in-the-url"
	logs := &lockedBuffer{}
	cfg := `{"smtp": {"host": "127.0.0.1", "port": 1, "username": "u", "password": "` + alertSMTPPassword + `", "from": "rp@example.com"},
		"operators": [{"name": "dba", "email": ["dba@example.com"], "webhooks": [{"name": "hook", "url": "` + hookURL + `", "secret": "` + alertHookSecret + `"},
			{"name": "dead", "url": "http://127.0.0.1:1/services/T0KEN-in-the-url", "secret": "` + alertHookSecret + `"}]}],
		"rules": [{"name": "etl-failed", "kind": "task_failed", "queues": ["etl"], "operators": ["dba"]},
		          {"name": "stuck", "kind": "queue_stuck", "threshold": "10m", "operators": ["dba"], "recovery": true}]}`
	e := newAPIEnv(t, apiOpts{dialect: testenv.SQLite, tokens: true, alerts: func(s queue.Store) *alerts.Runner {
		c, err := alerts.Parse([]byte(cfg))
		require.NoError(t, err)
		r := alerts.New(s, c, alerts.Options{Node: "n1", Poll: 50 * time.Millisecond, RetryBase: time.Hour,
			Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = r.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
		return r
	}})
	var seen strings.Builder
	call := func(method, path, token, body string) apiRes {
		r := e.call(method, path, token, body)
		seen.Write(r.body)
		return r
	}
	require.Equal(t, http.StatusForbidden, call("POST", "/api/alerts/test", testViewerToken, `{"operator":"dba"}`).status)
	bad := call("POST", "/api/alerts/test", "alice:"+testOperatorToken, `{"operator":"nobody"}`)
	require.Equal(t, http.StatusBadRequest, bad.status)
	require.Contains(t, bad.errorMsg(t), `"nobody" is not an operator`)
	ok := call("POST", "/api/alerts/test", "alice:"+testOperatorToken, `{"operator":"dba"}`)
	require.Equal(t, http.StatusAccepted, ok.status, string(ok.body))

	require.Eventually(t, func() bool {
		var page api.AlertDeliveryPage
		call("GET", "/api/alerts/deliveries", testViewerToken, "").json(t, &page)
		sent, failing := 0, 0
		for _, d := range page.Deliveries {
			if d.State == queue.AlertSent {
				sent++
			}
			if d.LastError != nil && d.State == queue.AlertPending {
				failing++
			}
		}
		return sent == 1 && failing == 2
	}, 20*time.Second, 50*time.Millisecond, "logs:\n%s", logs)
	mu.Lock()
	require.Len(t, got, 1)
	var m alerts.Message
	require.NoError(t, json.Unmarshal(got[0], &m))
	mu.Unlock()
	require.Equal(t, "test", m.State)

	var page api.AlertDeliveryPage
	call("GET", "/api/alerts/deliveries?state=pending", testViewerToken, "").json(t, &page)
	require.Len(t, page.Deliveries, 2)
	d := page.Deliveries[0]
	if d.Channel != "email" {
		d = page.Deliveries[1]
	}
	require.Equal(t, "email", d.Channel)
	require.NotNil(t, d.NextTry, "a failing delivery says when it is tried next")
	require.Equal(t, 1, d.Attempts)
	require.True(t, strings.HasPrefix(d.AlertID, "rp-"))
	require.Equal(t, http.StatusBadRequest, call("GET", "/api/alerts/deliveries?state=lost", testViewerToken, "").status)

	var a api.Alerts
	call("GET", "/api/alerts", testViewerToken, "").json(t, &a)
	require.True(t, a.Configured)
	require.Equal(t, []alerts.OperatorInfo{{Name: "dba", Channels: []string{"email", "webhook:hook", "webhook:dead"}}}, a.Operators)
	require.Len(t, a.Rules, 2)
	require.Equal(t, "30s", *a.Rules[0].Window)
	require.Equal(t, "10m0s", *a.Rules[1].Threshold)

	pageRes := call("GET", "/alerts", testViewerToken, "")
	require.Equal(t, http.StatusOK, pageRes.status)
	html := string(pageRes.body)
	for _, want := range []string{"etl-failed", "queue_stuck", "webhook:hook", "sent", "pending", d.AlertID} {
		require.Contains(t, html, want)
	}
	require.NotContains(t, html, "Send a test", "a viewer has no test button")
	opPage := call("GET", "/alerts", "alice:"+testOperatorToken, "")
	require.Contains(t, string(opPage.body), "Send a test")

	audit := call("GET", "/api/audit", testViewerToken, "")
	require.Contains(t, string(audit.body), "send_test_alert")

	everything := seen.String() + logs.String()
	for _, secret := range []string{alertSMTPPassword, alertHookSecret, "T0KEN-in-the-url"} {
		require.NotContains(t, everything, secret)
	}
}
