package postgres

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
)

// Listen hears one notification per distinct queue of an enqueue, keeps its
// connection checked while idle, comes back after its connection is killed
// (waking every known queue, since it may have missed enqueues), and returns
// when its context ends.
func TestListen(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := migratedStore(t, ctx)
	s.listenCheck = 100 * time.Millisecond // exercise the idle check often

	heard := make(chan string, 100)
	lctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Listen(lctx, func(q string) { heard <- q }) }()
	listenerPID := func() int {
		var pid int
		err := s.pool.QueryRow(ctx, `SELECT coalesce(max(pid), 0) FROM pg_stat_activity
			WHERE datname = current_database() AND application_name = $1 AND query <> ''`, ListenerApplicationName).Scan(&pid)
		require.NoError(t, err)
		return pid
	}
	require.Eventually(t, func() bool { return listenerPID() != 0 }, 10*time.Second, 10*time.Millisecond, "the listener connects")

	collect := func(n int) []string {
		t.Helper()
		var got []string
		for len(got) < n {
			select {
			case q := <-heard:
				got = append(got, q)
			case <-time.After(5 * time.Second):
				t.Fatalf("heard %v, want %d notifications", got, n)
			}
		}
		select {
		case q := <-heard:
			t.Fatalf("heard %v and then %q, want only %d", got, q, n)
		case <-time.After(300 * time.Millisecond):
		}
		slices.Sort(got)
		return got
	}
	task := func(q string) queue.NewTask { return queue.NewTask{Queue: q, Body: "SELECT 1"} }
	_, err := checked(s).Enqueue(ctx, []queue.NewTask{task("q1"), task("q2"), task("q1"), task("q3"), task("q2"), task("q1")})
	require.NoError(t, err)
	require.Equal(t, []string{"q1", "q2", "q3"}, collect(3), "one notification per distinct queue")

	// Idle for several checks; the connection still delivers.
	time.Sleep(500 * time.Millisecond)
	_, err = checked(s).Enqueue(ctx, []queue.NewTask{task("q2")})
	require.NoError(t, err)
	require.Equal(t, []string{"q2"}, collect(1))

	// Kill the listener's connection: it reconnects and wakes every queue.
	pid := listenerPID()
	var killed bool
	require.NoError(t, s.pool.QueryRow(ctx, `SELECT pg_terminate_backend($1)`, pid).Scan(&killed))
	require.True(t, killed)
	start := time.Now()
	require.Equal(t, []string{"q1", "q2", "q3"}, collect(3), "a reconnected listener wakes every known queue")
	t.Logf("listener back %s after its connection was killed", time.Since(start).Round(time.Millisecond))
	require.NotEqual(t, pid, listenerPID())
	_, err = checked(s).Enqueue(ctx, []queue.NewTask{task("q4")})
	require.NoError(t, err)
	require.Equal(t, []string{"q4"}, collect(1))

	stop()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(2 * time.Second):
		t.Fatal("Listen did not return after its context ended")
	}
}
