package sqlserver

import (
	"context"
	"database/sql"
	"fmt"

	"readpast/internal/queue"
)

// taskResultsQuery reads the result output one task's attempts kept, by the
// table's clustered key (task_id, attempt).
var taskResultsQuery = query{
	name: "task-results",
	text: readCommitted + `SELECT r.attempt, r.results
FROM dbo.readpast_results AS r
WHERE r.task_id = @task_id
ORDER BY r.attempt;
`,
	params: []string{"task_id"},
}

// TaskResults implements queue.ResultStore.
func (s *Store) TaskResults(ctx context.Context, taskID int64) ([]queue.AttemptOutput, error) {
	out, err := queryAll(ctx, s.db, taskResultsQuery.text, idArgs("task_id", taskID), func(r *sql.Rows) (queue.AttemptOutput, error) {
		var o queue.AttemptOutput
		err := r.Scan(&o.Attempt, &o.Results)
		return o, err
	})
	if err != nil {
		return nil, wrap(fmt.Sprintf("reading the result output of task %d", taskID), err)
	}
	return out, nil
}
