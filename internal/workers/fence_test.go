package workers

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"readpast/internal/faultproxy"
	"readpast/internal/queue"
	"readpast/internal/testenv"
	"readpast/internal/testpg"
)

// A node cut off from its store while its target still answers stops every
// body before the store can hand the task to another node (issue 25): the
// store is reached through a proxy that cuts or blackholes the line, the
// target directly. Each body sleeps on the target, then writes its effect.
// Checked from what the server itself ran (testenv.SessionWatch, by its own
// clock, the one leases are kept by): the cut node's copy stopped before its
// lease's end, the copy of the node that took the task over started after it,
// no two ever ran at once, and the abandoned copies wrote no effect.
//
// Without the fence the cut node only logs heartbeat errors and its copies
// run on: the other node's copies start beside them and both write effects.
func TestCutOffNodeStopsItsBodiesBeforeItsLeasesEnd(t *testing.T) {
	t.Parallel()
	for _, fault := range []string{"cut", "blackhole"} {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			runFenceCase(t, func(p *faultproxy.Proxy) {
				if fault == "cut" {
					p.Cut()
				} else {
					p.Blackhole()
				}
			})
		})
	}
}

// fenceSetup is a PostgreSQL database reached directly and through a proxy.
type fenceSetup struct {
	env
	proxy   *faultproxy.Proxy
	proxied Store // the same store, through the proxy
}

func newFenceSetup(t *testing.T) fenceSetup {
	t.Helper()
	srv := testpg.Shared(t)
	dsn := srv.NewDatabase(t)
	e := newEnv(t, testenv.On(t, testenv.Postgres, dsn))
	p := faultproxy.Start(t, "unix", filepath.Join(srv.SocketDir(), ".s.PGSQL.5432"))
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	proxied := testenv.OpenStore(t, "postgres://postgres@"+p.Addr()+u.Path+"?sslmode=disable", queue.Options{})
	return fenceSetup{env: e, proxy: p, proxied: proxied}
}

func runFenceCase(t *testing.T, fault func(*faultproxy.Proxy)) {
	s := newFenceSetup(t)
	const lease = 4 * time.Second // the fence's margin is a second of it
	const bodies = 4
	_, err := s.store.UpdateQueue(s.ctx, "fence", queue.QueueUpdate{Workers: intp(bodies), Actor: "test"})
	require.NoError(t, err)
	_, err = s.store.UpdateQueue(s.ctx, "default", queue.QueueUpdate{Workers: intp(0), Actor: "test"})
	require.NoError(t, err)
	conn, err := pgx.Connect(s.ctx, s.dsn)
	require.NoError(t, err)
	defer conn.Close(s.ctx)
	_, err = conn.Exec(s.ctx, `CREATE TABLE fence_effects (key text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())`)
	require.NoError(t, err)

	// Long enough that the other node takes the task over while an unfenced
	// copy still sleeps: it reclaims one lease after the cut.
	const sleep = 2 * lease
	keys := make([]string, bodies)
	tasks := make([]queue.NewTask, bodies)
	for i := range tasks {
		keys[i] = fmt.Sprintf("fence%d", i)
		tasks[i] = queue.NewTask{Queue: "fence", MaxAttempts: 5, Body: fmt.Sprintf(
			"%sSELECT pg_sleep(%.1f)\nGO\nINSERT INTO fence_effects (key) VALUES ('%s')",
			testenv.RunMarker(keys[i]), sleep.Seconds(), keys[i])}
	}
	ids := s.enqueue(t, tasks...)
	watch := testenv.WatchSessions(t, s.dsn)

	cutCfg := Config{NodeID: "cut-off", Lease: lease, Grace: 100 * time.Millisecond, Poll: 50 * time.Millisecond,
		ReclaimEvery: 200 * time.Millisecond, Logger: testLogger(t)}
	cutNode, err := New(s.proxied, s.target, cutCfg)
	require.NoError(t, err)
	testenv.StartNode(t, cutNode)
	require.Eventually(t, func() bool {
		for _, k := range keys {
			if len(watch.Spans(k)) == 0 {
				return false
			}
		}
		return true
	}, 30*time.Second, 10*time.Millisecond, "every body starts on the node that will be cut off")

	fault(s.proxy)
	// What the store says each lease lasts: the cut node renews nothing from
	// here on, so each lease ends no earlier than this.
	ends := make(map[string]time.Time, bodies)
	for i, id := range ids {
		task, err := s.store.Get(s.ctx, id)
		require.NoError(t, err)
		require.Equal(t, queue.StateRunning, task.State)
		require.True(t, strings.HasPrefix(task.LeaseOwner, "cut-off/"), "task %d is held by %s", id, task.LeaseOwner)
		ends[keys[i]] = task.LeaseExpiresAt
	}

	// Another node, on the store directly, with a target of its own (so no
	// session of the cut node's is handed to it), takes the tasks over once
	// their leases end.
	other := s.env
	other.target = s.Target(t)
	other.startNode(t, Config{NodeID: "other", Lease: lease, Grace: 100 * time.Millisecond, Poll: 50 * time.Millisecond,
		ReclaimEvery: 200 * time.Millisecond})
	for _, id := range ids {
		s.waitState(t, id, queue.StateSucceeded, 60*time.Second)
	}
	watch.Stop()
	require.NoError(t, watch.Err())

	for _, k := range keys {
		cut, took := copiesOf(watch.Spans(k))
		require.NotEmpty(t, took, "%s: the other node ran it too", k)
		t.Logf("%s: cut-off copy last seen %s before its lease's end; the other node's began %s after that end",
			k, ends[k].Sub(cut.Last).Round(time.Millisecond), took[0].First.Sub(ends[k]).Round(time.Millisecond))
		require.True(t, cut.Last.Before(ends[k]),
			"%s: the cut-off node's copy still ran on the target at %s, past its lease's end at %s", k, cut.Last, ends[k])
		for _, other := range took {
			require.True(t, cut.Last.Before(other.First), "%s: the copy of session %d ran while the cut-off one did", k, other.PID)
		}
	}
	require.Empty(t, watch.Overlaps(), "no task's body may run on two nodes at once")

	var effects int
	require.NoError(t, conn.QueryRow(s.ctx, `SELECT count(*) FROM fence_effects`).Scan(&effects))
	require.Equal(t, bodies, effects, "each task's effect is written once, by the copy that succeeded")

	// The line comes back: the cut-off node heartbeats again, and its late
	// records change nothing (its leases are gone).
	s.proxy.Restore()
	back := time.Now()
	require.Eventually(t, func() bool {
		nodes, err := s.store.Nodes(s.ctx, time.Minute)
		require.NoError(t, err)
		for _, n := range nodes {
			if n.ID == "cut-off" && n.HeartbeatAt.After(back) {
				return true
			}
		}
		return false
	}, 30*time.Second, 20*time.Millisecond, "the cut-off node heartbeats again once the line is back")
	for _, id := range ids {
		task, err := s.store.Get(s.ctx, id)
		require.NoError(t, err)
		require.Equal(t, queue.StateSucceeded, task.State, "task %d", id)
	}
}

// copiesOf splits the sessions seen running one task's body into the first
// copy's (its session's spans merged: a loaded machine may pause the sampling
// past SessionWatch's gap) and every other session's.
func copiesOf(spans []testenv.Span) (first testenv.Span, others []testenv.Span) {
	if len(spans) == 0 {
		return first, nil
	}
	first = spans[0]
	for _, s := range spans[1:] {
		if s.PID == first.PID {
			if s.Last.After(first.Last) {
				first.Last = s.Last
			}
			continue
		}
		others = append(others, s)
	}
	return first, others
}
