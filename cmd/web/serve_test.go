package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/queue/open"
)

// syncBuffer is a log sink the test reads while the server writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

// served is a `readpast serve` running in the test, on its own address.
type served struct {
	addr string
	logs *syncBuffer
	stop func() int // cancels serve and returns its exit code
}

// startServe runs serve with args after --dsn and --listen, and waits until
// it says where it listens.
func startServe(t *testing.T, dsn string, args ...string) served {
	t.Helper()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"--dsn", dsn, "--listen", addr}, args...), envOf(nil), logs, logs)
	}()
	stopped := false
	stop := func() int {
		t.Helper()
		if stopped {
			return 0
		}
		stopped = true
		cancel()
		select {
		case code := <-done:
			return code
		case <-time.After(30 * time.Second):
			t.Fatalf("serve did not stop; logs:\n%s", logs.String())
			return -1
		}
	}
	t.Cleanup(func() { stop() })
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "url=http://"+addr) }, 20*time.Second, 20*time.Millisecond,
		"one log line must give the URL; logs:\n%s", logs.String())
	return served{addr: addr, logs: logs, stop: stop}
}

// serve runs end to end on a fresh SQLite file: it migrates, says where it
// listens, answers health checks, runs a task and stops cleanly on cancel.
func TestServeRunsAndStops(t *testing.T) {
	t.Parallel()
	dsn := filepath.Join(t.TempDir(), "readpast.db")
	srv := startServe(t, dsn, "--poll", "50ms", "--grace", "1s")
	for _, path := range []string{"/healthz", "/readyz"} {
		res, err := http.Get("http://" + srv.addr + path)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode, path)
	}

	s, err := open.Store(context.Background(), dsn, queue.Options{})
	require.NoError(t, err)
	defer s.Close()
	ids, err := s.Enqueue(context.Background(), []queue.NewTask{{Body: "CREATE TABLE served (n int)"}})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		task, err := s.Get(context.Background(), ids[0].ID)
		return err == nil && task.State == queue.StateSucceeded
	}, 20*time.Second, 20*time.Millisecond, "the node's workers must run the task")

	require.Equal(t, 0, srv.stop(), "logs:\n%s", srv.logs.String())
	require.Contains(t, srv.logs.String(), "node stopped")
}

// A stop requested while the node is still starting (connecting to the store,
// migrating) ends it as cleanly as a running node's: exit 0, not "serve
// failed" (a chaos run once stopped a node that had just been started).
func TestServeStoppedWhileStartingExitsCleanly(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	logs := &syncBuffer{}
	dsn := filepath.Join(t.TempDir(), "readpast.db")
	code := run(ctx, []string{"--dsn", dsn, "--listen", freeAddr(t)}, envOf(nil), logs, logs)
	require.Equal(t, 0, code, "logs:\n%s", logs.String())
	require.Contains(t, logs.String(), "stopped while starting")
	require.NotContains(t, logs.String(), "failed")
}

func TestVersionAndMigrateStatus(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	require.Equal(t, 0, run(context.Background(), []string{"version"}, envOf(nil), &out, &out))
	require.Contains(t, out.String(), "readpast")
	out.Reset()
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "m.db")
	require.Equal(t, 0, run(context.Background(), []string{"migrate", "status", "--dsn", dsn}, envOf(nil), &out, &out), out.String())
	require.Contains(t, out.String(), "schema version 0")
	out.Reset()
	require.Equal(t, 0, run(context.Background(), []string{"migrate", "--dsn", dsn}, envOf(nil), &out, &out), out.String())
	require.Contains(t, out.String(), "up to date")
	out.Reset()
	require.Equal(t, 2, run(context.Background(), []string{"--dsn", "mysql://x"}, envOf(nil), &out, &out))
}
