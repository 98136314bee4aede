package web

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"readpast/internal/alerts"
	"readpast/internal/queue"
)

// The Alerts page in a browser: reached from the navigation, it lists the
// operator and the rule; "Send a test" comes back with a flash, the
// receiver gets the test, and the delivery's row says sent.
func TestBrowserAlertsSendATest(t *testing.T) {
	t.Parallel()
	tab, _ := newBrowser(t)
	var mu sync.Mutex
	got := 0
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		mu.Lock()
		got++
		mu.Unlock()
	}))
	t.Cleanup(hook.Close)
	e := newUIEnv(t, uiOpts{dialect: browserDialect, alerts: func(s queue.Store) *alerts.Runner {
		c, err := alerts.Parse([]byte(`{"operators": [{"name": "dba", "webhooks": [{"name": "pager", "url": "` + hook.URL + `", "secret": "0123456789abcdef-secret"}]}],
			"rules": [{"name": "etl-failed", "kind": "task_failed", "queues": ["etl"], "operators": ["dba"]}]}`))
		require.NoError(t, err)
		r := alerts.New(s, c, alerts.Options{Node: "n1", Poll: 50 * time.Millisecond})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = r.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
		return r
	}})
	require.NoError(t, chromedp.Do(tab, chromedp.Navigate(e.srv.URL+"/")))
	loc := submit(t, tab, `header nav a[href="/alerts"]`)
	require.Equal(t, e.srv.URL+"/alerts", loc)
	require.Equal(t, "webhook:pager", textOf(tab, `tr[data-operator="dba"] td:nth-child(2)`))
	require.Equal(t, "task_failed", textOf(tab, `tr[data-rule="etl-failed"] td:nth-child(2)`))
	loc = submit(t, tab, `tr[data-operator="dba"] button`)
	require.Equal(t, e.srv.URL+"/alerts", loc)
	require.Contains(t, textOf(tab, ".flash"), "A test message to dba is queued")
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return got == 1 }, 20*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool {
		require.NoError(t, chromedp.Do(tab, chromedp.Navigate(e.srv.URL+"/alerts")))
		return textOf(tab, "table.alert-deliveries tbody tr:first-child td:nth-child(6)") == "sent"
	}, 20*time.Second, 200*time.Millisecond)
	require.Equal(t, "test", textOf(tab, "table.alert-deliveries tbody tr:first-child td:nth-child(2)"))
	shoot(t, tab, screenshots(t), "alerts")
}
