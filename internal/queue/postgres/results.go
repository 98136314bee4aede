package postgres

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"readpast/internal/queue"
)

// withResults adds to an ending statement (endSQL, releaseUncountedSQL) the
// insert of the result output its attempts kept, in the same statement: the
// output commits with the attempt's end or not at all. A batch in which no
// attempt kept any (every queue's result_rows is 0, the default) runs the
// statement unchanged. The attempt number is the task's attempts as the
// statement's snapshot has it, which ending an attempt does not change: the
// number its log row gets.
func withResults(query string, args []any, attempts []queue.Attempt) (string, []any) {
	if !slices.ContainsFunc(attempts, func(a queue.Attempt) bool { return a.Results != "" }) {
		return query, args
	}
	results := make([]*string, len(attempts))
	for i, a := range attempts {
		if a.Results != "" {
			results[i] = &attempts[i].Results
		}
	}
	n := len(args) + 1
	// The task ids are the array just before the outcomes: $3 of endSQL,
	// $2 of releaseUncountedSQL (whose first argument is the uncounted flags).
	ids := "$3"
	if query == releaseUncountedSQL {
		ids = "$2"
	}
	kept := `kept AS (
		INSERT INTO readpast_results (task_id, attempt, results)
		SELECT t.id, t.attempts, ($` + strconv.Itoa(n) + `::text[])[e.out_ord]
		FROM ended e JOIN readpast_tasks t ON t.id = (` + ids + `::bigint[])[e.out_ord]
		WHERE ($` + strconv.Itoa(n) + `::text[])[e.out_ord] IS NOT NULL
		ON CONFLICT DO NOTHING)`
	if query == releaseUncountedSQL {
		query = `WITH ended AS MATERIALIZED (` + query + `),
	` + kept + `
	SELECT out_ord, out_state, out_retry_at FROM ended`
	} else {
		const last = "\n\tSELECT out_ord, out_state, out_retry_at FROM ended"
		query = strings.TrimSuffix(query, last) + ",\n\t" + kept + last
	}
	return query, append(args, results)
}

// TaskResults implements queue.ResultStore.
func (s *Store) TaskResults(ctx context.Context, taskID int64) ([]queue.AttemptOutput, error) {
	rows, err := s.pool.Query(ctx, `SELECT attempt, results FROM readpast_results WHERE task_id = $1 ORDER BY attempt`, taskID)
	if err != nil {
		return nil, wrap(err, "reading the result output of task %d", taskID)
	}
	defer rows.Close()
	var out []queue.AttemptOutput
	for rows.Next() {
		var o queue.AttemptOutput
		if err := rows.Scan(&o.Attempt, &o.Results); err != nil {
			return nil, wrap(err, "reading the result output of task %d", taskID)
		}
		out = append(out, o)
	}
	return out, wrap(rows.Err(), "reading the result output of task %d", taskID)
}
