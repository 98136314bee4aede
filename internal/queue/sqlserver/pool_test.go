package sqlserver_test

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/queue/sqlserver"
	"readpast/internal/testenv"
	"readpast/internal/workers"
)

// TestIdleNodeOpensNoSessions: a node with 8 idle queues polls, heartbeats and
// re-reads its settings every second, a few store calls at once; with
// database/sql's default of 2 idle connections the pool closed the rest after
// each round and logged in again for the next (16 sessions in 30 s). Once the
// pool has grown to what the node uses at once, a minute passes without a
// login.
func TestIdleNodeOpensNoSessions(t *testing.T) {
	if os.Getenv(testenv.MSSQLDSNEnv) == "" {
		t.Skip(testenv.MSSQLDSNEnv + " not set: no SQL Server to run on")
	}
	if testing.Short() {
		t.Skip("takes over a minute")
	}
	e := testenv.New(t, testenv.SQLServer)
	s := queue.Unwrap(e.Store).(*sqlserver.Store)
	workersEach := 2
	for i := range 8 {
		_, err := s.UpdateQueue(e.Ctx, string(rune('a'+i))+"-idle", queue.QueueUpdate{Workers: &workersEach, Actor: "test"})
		require.NoError(t, err)
	}
	n, err := workers.New(s, e.Target(t), workers.Config{NodeID: "idle-node"})
	require.NoError(t, err)
	testenv.StartNode(t, n)

	time.Sleep(15 * time.Second) // the pool grows to what the node uses at once
	before := s.SessionsOpened()
	time.Sleep(time.Minute)
	opened := s.SessionsOpened() - before
	require.Zero(t, opened, "an idle node opened %d store sessions in a minute (after %d to start)", opened, before)
}
