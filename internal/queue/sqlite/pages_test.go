package sqlite

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
)

// A page of a group's or a schedule's tasks reads their rows of the page's
// state only, by an index range per state, however long their history is: a
// group and a schedule with 20,000 succeeded tasks, and one pending task each,
// the oldest of all. When their indexes were (group_name,
// id) and (schedule_name, id): a page of one state walked all of their tasks
// newest first and filtered the state.
func TestTaskPagesSkipOtherHistory(t *testing.T) {
	ctx := context.Background()
	s := migratedStore(t, ctx)
	_, err := checked(s).Enqueue(ctx, []queue.NewTask{{Queue: "quiet", Body: "SELECT 1", Group: "nightly"}})
	require.NoError(t, err)
	_, err = s.w.ExecContext(ctx, `
		UPDATE readpast_tasks SET schedule_name = 'nightly';
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
		INSERT INTO readpast_tasks (queue, body, state, attempts, available_at, created_at, finished_at, group_name, schedule_name)
		SELECT 'busy', 'SELECT 1', 'succeeded', 1, 0, 0, 0, 'nightly', 'nightly' FROM n`)
	require.NoError(t, err)

	for name, c := range map[string]struct {
		p     queue.ListParams
		index string
		want  int
	}{
		"the group's pending":       {queue.ListParams{Group: "nightly", State: queue.StatePending, Limit: 50}, "readpast_tasks_group_state (group_name=? AND state=?", 1},
		"the group's cancelled":     {queue.ListParams{Group: "nightly", State: queue.StateCancelled, Limit: 50}, "readpast_tasks_group_state (group_name=? AND state=?", 0},
		"the group, a page":         {queue.ListParams{Group: "nightly", Limit: 50}, "readpast_tasks_group_state (group_name=? AND state=?", 50},
		"the schedule's pending":    {queue.ListParams{Schedule: "nightly", State: queue.StatePending, Limit: 50}, "readpast_tasks_schedule_state (schedule_name=? AND state=?", 1},
		"the schedule's failed":     {queue.ListParams{Schedule: "nightly", State: queue.StateFailed, Limit: 50}, "readpast_tasks_schedule_state (schedule_name=? AND state=?", 0},
		"the schedule, a page":      {queue.ListParams{Schedule: "nightly", Limit: 50}, "readpast_tasks_schedule_state (schedule_name=? AND state=?", 50},
		"the schedule, a later one": {queue.ListParams{Schedule: "nightly", Before: 10000, Limit: 50}, "readpast_tasks_schedule_state (schedule_name=? AND state=?", 50},
	} {
		_, err := queue.CheckList(c.p)
		require.NoError(t, err)
		query, args := listSQL(c.p)
		for _, step := range queryPlan(t, s, query, args) {
			// A sort would mean a range read whole before the page is cut.
			require.NotContains(t, step, "TEMP B-TREE", "%s sorts", name)
			if !strings.Contains(step, "readpast_tasks") {
				continue
			}
			require.True(t, strings.Contains(step, c.index) || strings.Contains(step, "USING INTEGER PRIMARY KEY (rowid=?)"),
				"%s: %q reads more than the rows of the page's state", name, step)
		}
		page, err := checked(s).List(ctx, c.p)
		require.NoError(t, err)
		require.Len(t, page, c.want, name)
		for i, task := range page {
			require.True(t, c.p.State == "" || task.State == c.p.State, name)
			require.True(t, c.p.Before == 0 || task.ID < c.p.Before, name)
			if i > 0 {
				require.Less(t, task.ID, page[i-1].ID, "%s: newest first", name)
			}
		}
	}
}

// queryPlan is SQLite's plan for query: the detail of each step.
func queryPlan(t *testing.T, s *Store, query string, args []any) []string {
	t.Helper()
	rows, err := s.r.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+query, args...)
	require.NoError(t, err)
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		require.NoError(t, rows.Scan(&id, &parent, &unused, &detail))
		plan = append(plan, detail)
	}
	require.NoError(t, rows.Err())
	return plan
}
