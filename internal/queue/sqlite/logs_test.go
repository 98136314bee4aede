package sqlite

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
)

// A page of the log filtered by queue reads that queue's rows only, by an
// index range per outcome, however many rows other queues have: a busy
// queue's 20,000 attempts, and a quiet queue's two, the oldest of all. Without
// (queue, outcome, id) a queue of one outcome walked the outcome's range newest
// first and filtered the queue, reading every busy row.
func TestLogPagesSkipOtherHistory(t *testing.T) {
	ctx := context.Background()
	s := migratedStore(t, ctx)
	_, err := s.w.ExecContext(ctx, `
		INSERT INTO readpast_attempts (task_id, attempt, queue, started_at, finished_at, duration_ms, outcome)
		VALUES (1, 1, 'quiet', 0, 0, 0, 'succeeded'), (2, 1, 'quiet', 0, 0, 0, 'failed');
		WITH RECURSIVE n(i) AS (SELECT 3 UNION ALL SELECT i + 1 FROM n WHERE i < 20002)
		INSERT INTO readpast_attempts (task_id, attempt, queue, started_at, finished_at, duration_ms, outcome)
		SELECT i, 1, 'busy', 0, 0, 0, CASE WHEN i % 10 = 0 THEN 'failed' ELSE 'succeeded' END FROM n`)
	require.NoError(t, err)

	for name, c := range map[string]struct {
		q    queue.LogQuery
		want int
	}{
		"the quiet queue's successes": {queue.LogQuery{Queue: "quiet", Outcome: queue.OutcomeSucceeded, Limit: 50}, 1},
		"the quiet queue":             {queue.LogQuery{Queue: "quiet", Limit: 50}, 2},
		"the busy queue, a page":      {queue.LogQuery{Queue: "busy", Limit: 50}, 50},
	} {
		_, err := queue.CheckLogQuery(c.q)
		require.NoError(t, err)
		query, args := attemptsSQL(c.q)
		plan := queryPlan(t, s, query, args)
		for _, step := range plan {
			require.NotContains(t, step, "TEMP B-TREE", "%s sorts", name)
			if !strings.Contains(step, "readpast_attempts") {
				continue
			}
			// Each read of the log is a range of (queue, outcome, id) or a
			// lookup by id; nothing walks another queue's rows.
			require.True(t, strings.Contains(step, "readpast_attempts_list (queue=? AND outcome=?") ||
				strings.Contains(step, "USING INTEGER PRIMARY KEY (rowid=?)"),
				"%s: %q reads more than the queue's rows; the plan:\n%s", name, step, strings.Join(plan, "\n"))
		}
		page, err := checked(s).Attempts(ctx, c.q)
		require.NoError(t, err)
		require.Len(t, page, c.want, name)
		for i, a := range page {
			require.Equal(t, c.q.Queue, a.Queue, name)
			require.True(t, c.q.Outcome == "" || a.Outcome == c.q.Outcome, name)
			if i > 0 {
				require.Less(t, a.ID, page[i-1].ID, "%s: newest first", name)
			}
		}
	}
}
