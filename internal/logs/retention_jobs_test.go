package logs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/jobs"
	"readpast/internal/queue"
	"readpast/internal/testenv"
)

// Job runs go with the task history, at its age: an ended run older than
// TaskAge is purged with its steps' tasks; a running one stays.
func TestRetentionPurgesEndedJobRuns(t *testing.T) {
	t.Parallel()
	testenv.ForEachDialect(t, func(t *testing.T, e *testenv.Env) {
		ed := jobs.Editor{Store: e.Store}
		_, _, err := ed.CreateFromJSON(t.Context(), []byte(`{"name": "j", "queue": "rq", "overlap": "allow",
			"steps": [{"name": "a", "body": "SELECT 1"}]}`), true, "alice")
		require.NoError(t, err)
		ended, err := ed.Run(t.Context(), "j", "", "alice")
		require.NoError(t, err)
		got, err := e.Store.Claim(t.Context(), queue.ClaimParams{Queue: "rq", Owner: "n/w", Limit: 1, LeaseDuration: time.Minute})
		require.NoError(t, err)
		require.Len(t, got, 1)
		_, err = e.Store.Finish(t.Context(), []queue.Attempt{{Lease: got[0].Lease(), Outcome: queue.OutcomeSucceeded}})
		require.NoError(t, err)
		running, err := ed.Run(t.Context(), "j", "", "alice")
		require.NoError(t, err)
		time.Sleep(300 * time.Millisecond)

		r := &Retention{Store: e.Store, TaskAge: 200 * time.Millisecond}
		_, err = r.PurgeOnce(t.Context())
		require.NoError(t, err)
		_, err = e.Store.GetRun(t.Context(), ended.RunID)
		require.ErrorIs(t, err, queue.ErrNotFound, "the ended run went with its task")
		run, err := e.Store.GetRun(t.Context(), running.RunID)
		require.NoError(t, err)
		require.Equal(t, queue.RunRunning, run.State, "a running run stays")
	})
}
