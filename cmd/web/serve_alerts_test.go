package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/queue/open"
)

const (
	serveSMTPPassword = "serve-smtp-Pa55word-xyz"
	serveHookSecret   = "serve-hook-secret-0123456789"
	serveURLToken     = "T0KEN-serve-url"
)

func alertsConfigFile(t *testing.T, hookURL string, mode os.FileMode) string {
	t.Helper()
	cfg := fmt.Sprintf(`{"smtp": {"host": "127.0.0.1", "port": 1, "username": "u", "password": %q, "from": "rp@example.com"},
		"operators": [{"name": "dba", "email": ["dba@example.com"], "webhooks": [
			{"name": "hook", "url": %q, "secret": %q},
			{"name": "dead", "url": "http://127.0.0.1:1/services/%s", "secret": %q}]}],
		"rules": [{"name": "failed", "kind": "task_failed", "operators": ["dba"], "window": "0s"}]}`,
		serveSMTPPassword, hookURL, serveHookSecret, serveURLToken, serveHookSecret)
	path := filepath.Join(t.TempDir(), "alerts.json")
	require.NoError(t, os.WriteFile(path, []byte(cfg), mode))
	require.NoError(t, os.Chmod(path, mode))
	return path
}

// A configuration file others can read is refused at start, saying how to
// fix it, and without printing what it holds.
func TestServeRefusesAnAlertsConfigOthersCanRead(t *testing.T) {
	t.Parallel()
	path := alertsConfigFile(t, "http://127.0.0.1:1/x", 0o644)
	logs := &syncBuffer{}
	code := run(context.Background(), []string{"--dsn", filepath.Join(t.TempDir(), "readpast.db"), "--listen", freeAddr(t),
		"--alerts-config", path}, envOf(nil), logs, logs)
	require.NotEqual(t, 0, code)
	require.Contains(t, logs.String(), "chmod 600")
	require.NotContains(t, logs.String(), serveSMTPPassword)
}

// A task that fails for good in a running node reaches the operator's
// webhook; and nothing the run printed or served (its whole log at debug
// level, the Alerts page, the alerts API, /metrics, the store's file) holds
// a secret of the configuration.
func TestServeAlertsAndShowsNoSecret(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var bodies []string
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
	}))
	t.Cleanup(hook.Close)
	path := alertsConfigFile(t, hook.URL+"/services/"+serveURLToken, 0o600)
	dsn := filepath.Join(t.TempDir(), "readpast.db")
	srv := startServe(t, dsn, "--poll", "50ms", "--grace", "1s", "--log-level", "debug", "--alerts-config", path)

	s, err := open.Store(context.Background(), dsn, queue.Options{})
	require.NoError(t, err)
	defer s.Close()
	ids, err := s.Enqueue(context.Background(), []queue.NewTask{{Queue: "etl", Body: "SELECT * FROM no_such_table", MaxAttempts: 1}})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(bodies) == 1
	}, 30*time.Second, 20*time.Millisecond, "logs:\n%s", srv.logs.String())
	mu.Lock()
	require.Contains(t, bodies[0], fmt.Sprintf("task %d failed in queue etl", ids[0].ID))
	require.Contains(t, bodies[0], "no_such_table")
	mu.Unlock()
	// Let the failing channels fail and be logged.
	require.Eventually(t, func() bool {
		l := srv.logs.String()
		return strings.Count(l, "a delivery failed") >= 2 && strings.Contains(l, `msg="alerts: sent"`)
	}, 20*time.Second, 20*time.Millisecond)

	var served strings.Builder
	for _, p := range []string{"/alerts", "/api/alerts", "/api/alerts/deliveries", "/metrics", "/audit", "/api/audit"} {
		res, err := http.Get("http://" + srv.addr + p)
		require.NoError(t, err)
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode, p)
		served.Write(b)
	}
	require.Contains(t, served.String(), "webhook:dead")
	require.Contains(t, served.String(), `readpast_alert_sends_total{channel="webhook",result="sent"} 1`)
	require.Contains(t, served.String(), `readpast_alert_sends_total{channel="email",result="failed"}`)
	require.Equal(t, 0, srv.stop())
	// Nor the store: every byte of the SQLite file and its write-ahead log.
	var stored strings.Builder
	for _, f := range []string{dsn, dsn + "-wal"} {
		b, err := os.ReadFile(f)
		if err == nil {
			stored.Write(b)
		}
	}
	require.Contains(t, stored.String(), "webhook:dead", "the deliveries are in the file read")
	everything := served.String() + srv.logs.String() + stored.String()
	for _, secret := range []string{serveSMTPPassword, serveHookSecret, serveURLToken} {
		require.NotContains(t, everything, secret)
	}
}
