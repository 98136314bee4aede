package workers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/target"
	"readpast/internal/testenv"
)

// A transactional body runs on a store session, not a target's; a node that
// reclaims its lease must still find that session by the attempt's name and
// end it, as it ends a plain body's, and the body's transaction rolls back
// with nothing committed. The ender is what a node's reclaimer has
// (reclaim.go, node.go): its target set, which reaches the store's server
// through its "store" target once the set has checked its targets. The body
// waits on a row lock the test holds, a wait only the session's end stops.
func TestEndSessionsEndsALostTransactionalBody(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, e env) {
		if e.Dialect == testenv.SQLite {
			t.Skip("SQLite has no sessions to end")
		}
		ender, err := target.NewSet("n1", e.dsn, "", nil, nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = ender.Close() })
		ender.Check(e.ctx) // as Watch does first
		e.Exec(t, "CREATE TABLE lost_tx (id int PRIMARY KEY, v int NOT NULL)")
		e.Exec(t, "INSERT INTO lost_tx VALUES (1, 0)")
		e.Exec(t, "CREATE TABLE lost_tx_effect (tag varchar(20))")
		_, release := testenv.HoldRows(t, e.Dialect, e.dsn, "", "UPDATE lost_tx SET v = v + 1 WHERE id = 1")
		defer release()

		id := e.enqueue(t, queue.NewTask{Queue: "tx", Body: "body", Transactional: true})[0]
		got, err := e.store.Claim(e.ctx, queue.ClaimParams{Queue: "tx", Owner: "n1/w1", Limit: 1, LeaseDuration: time.Hour})
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.Equal(t, id, got[0].ID)
		lease := got[0].Lease()
		done := make(chan error, 1)
		go func() {
			res, err := e.store.RunTransactional(e.ctx, queue.Attempt{Lease: lease},
				"INSERT INTO lost_tx_effect VALUES ('lost')\nGO\nUPDATE lost_tx SET v = v + 1 WHERE id = 1")
			if err == nil {
				err = res.BodyErr
			}
			done <- err
		}()
		select {
		case err := <-done:
			t.Fatalf("the body ended while the row was locked: %v", err)
		case <-time.After(e.Slower(t, time.Second)):
		}

		var n int
		require.Eventually(t, func() bool {
			n, err = ender.EndSessions(e.ctx, []string{queue.AttemptSessionName(lease)})
			return err != nil || n > 0
		}, e.Slower(t, 10*time.Second), 100*time.Millisecond, "no session carried the attempt's name")
		require.NoError(t, err)
		require.Equal(t, 1, n, "one session carried the lost attempt's name")
		select {
		case err := <-done:
			require.Error(t, err, "the body's session was ended")
		case <-time.After(e.Slower(t, 10*time.Second)):
			t.Fatal("the transactional body still runs after its session was ended")
		}
		release()
		require.Zero(t, e.QueryInt(t, "SELECT count(*) FROM lost_tx_effect"), "the body's transaction rolled back")
		task, err := e.store.Get(e.ctx, id)
		require.NoError(t, err)
		require.Equal(t, queue.StateRunning, task.State, "the attempt's end is the reclaim's to record, not the body's")
	})
}
