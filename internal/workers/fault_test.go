package workers

import (
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/testenv"
)

// A body whose database session an administrator ends (pg_terminate_backend,
// as a server restart or a failover does to every session) did not fail: the
// attempt is given back and does not count against max_attempts (issue 25).
// The task allows one attempt; its first run is ended from outside, its
// second succeeds. Before, the fault used up its only attempt and the task
// ended failed.
func TestLostSessionDoesNotUseAnAttempt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testenv.New(t, testenv.Postgres))
	conn, err := pgx.Connect(e.ctx, e.dsn)
	require.NoError(t, err)
	defer conn.Close(e.ctx)
	_, err = conn.Exec(e.ctx, `CREATE TABLE fault_runs (n serial PRIMARY KEY)`)
	require.NoError(t, err)
	// Each run counts itself; the first sleeps until it is ended, the next
	// ones end at once.
	body := "INSERT INTO fault_runs DEFAULT VALUES\nGO\n" + testenv.RunMarker("fault") +
		"SELECT pg_sleep(CASE WHEN (SELECT count(*) FROM fault_runs) > 1 THEN 0 ELSE 60 END)"
	id := e.enqueue(t, queue.NewTask{Body: body, MaxAttempts: 1})[0]
	e.startNode(t, Config{NodeID: "n1", Poll: 50 * time.Millisecond, Lease: 3 * time.Second})

	var ended bool
	require.Eventually(t, func() bool {
		err := conn.QueryRow(e.ctx, `SELECT count(pg_terminate_backend(pid)) > 0 FROM pg_stat_activity
			WHERE datname = current_database() AND `+testenv.RunningSQL+` AND state = 'active'`, "fault").Scan(&ended)
		require.NoError(t, err)
		return ended
	}, 30*time.Second, 20*time.Millisecond, "the body starts, and its session is ended from outside")

	var task *queue.Task
	require.Eventually(t, func() bool {
		task, err = e.store.Get(e.ctx, id)
		require.NoError(t, err)
		return task.State.Finished()
	}, 30*time.Second, 20*time.Millisecond, "the task ends")
	require.Equal(t, queue.StateSucceeded, task.State, "a lost session must not use the task's only attempt: %s", task.LastError)
	require.Equal(t, 2, task.Attempts)
	recs, err := e.store.TaskAttempts(e.ctx, id)
	require.NoError(t, err)
	require.Len(t, recs, 2)
	require.Equal(t, queue.OutcomeFailed, recs[0].Outcome, "the lost session is logged as a failed attempt")
	require.True(t, strings.HasPrefix(recs[0].Error, "the database session was lost"), "the log says why: %s", recs[0].Error)
	require.Equal(t, queue.OutcomeSucceeded, recs[1].Outcome)
}
