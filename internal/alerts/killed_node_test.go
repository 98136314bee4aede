package alerts_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/alerts"
	"readpast/internal/queue"
	"readpast/internal/queue/open"
	"readpast/internal/testenv"
)

// The environment a child node reads (TestMain runs it instead of the tests).
const (
	childDSN    = "READPAST_ALERTS_CHILD_DSN"
	childConfig = "READPAST_ALERTS_CHILD_CONFIG"
)

func TestMain(m *testing.M) {
	if os.Getenv(childDSN) != "" {
		os.Exit(runChildNode())
	}
	os.Exit(testenv.Main(m))
}

// runChildNode is a node of its own process: an alerts runner on the
// store at childDSN, with a 2s lease, until it is killed.
func runChildNode() int {
	ctx := context.Background()
	s, err := open.Store(ctx, os.Getenv(childDSN), queue.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	c, err := alerts.Parse([]byte(os.Getenv(childConfig)))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	_ = alerts.New(s, c, alerts.Options{Node: "child", Poll: 50 * time.Millisecond, Lease: 2 * time.Second}).Run(ctx)
	return 0
}

// A node killed while its sends are in flight loses none of them: another
// node takes each delivery over when its lease ends and sends it again, and
// what the receiver got twice has one alert id, so it dedupes.
func TestKilledNodeMidDeliveryLosesNone(t *testing.T) {
	testenv.ForEachDialect(t, func(t *testing.T, e *testenv.Env) {
		rc := startReceiver(t, hookSecret, 0)
		hang := make(chan struct{})
		rc.mu.Lock()
		rc.hang = hang
		rc.mu.Unlock()
		cfg := fmt.Sprintf(`{"operators": [{"name": "ops", "webhooks": [{"name": "h", "url": "%s/x", "secret": %q}]}],
			"rules": [{"name": "all", "kind": "task_failed", "operators": ["ops"], "window": "0s"}]}`, rc.URL, hookSecret)
		failTasks(t, e, "etl", 5, "boom")

		child := exec.Command(os.Args[0], "-test.run=^$")
		child.Env = append(os.Environ(), childDSN+"="+e.DSN, childConfig+"="+cfg)
		child.Stderr = os.Stderr
		require.NoError(t, child.Start())
		t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
		// The child is in the middle of its sends: every one waits on the receiver.
		require.Eventually(t, func() bool {
			rc.mu.Lock()
			defer rc.mu.Unlock()
			return len(rc.tries) == 5
		}, 60*time.Second, 20*time.Millisecond)
		require.NoError(t, child.Process.Kill())
		_ = child.Wait()
		rc.mu.Lock()
		rc.hang = nil
		rc.mu.Unlock()
		close(hang) // the receiver answers the dead node's requests: it got them, the node never heard
		for _, d := range deliveries(t, e.Store) {
			require.Equal(t, queue.AlertPending, d.State, "the killed node recorded nothing")
			require.Equal(t, "child", d.ClaimedBy)
		}

		runAlerts(t, e.Store, cfg, "survivor", &syncBuffer{}, alerts.Options{Lease: 2 * time.Second})
		require.Eventually(t, func() bool {
			for _, d := range deliveries(t, e.Store) {
				if d.State != queue.AlertSent {
					return false
				}
			}
			return true
		}, 60*time.Second, 50*time.Millisecond)
		got := rc.accepted()
		ids := map[string]int{}
		for _, h := range got {
			ids[h.AlertID]++
		}
		require.Len(t, ids, 5, "every alert arrived")
		for id, n := range ids {
			require.LessOrEqual(t, n, 2, "alert %s: at most the dead node's send and the survivor's", id)
		}
		for _, d := range deliveries(t, e.Store) {
			require.Equal(t, "survivor", d.ClaimedBy)
			require.Equal(t, 2, d.Attempts)
		}
	})
}
