package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"readpast/internal/queue"
)

// keepResults writes the result output an attempt kept, in the transaction
// that logs it; an attempt without any (its queue keeps none) writes nothing.
// An attempt number met twice keeps its first output.
func keepResults(tx execer, a queue.Attempt, attempt int) error {
	if a.Results == "" {
		return nil
	}
	_, err := tx.Exec(`INSERT INTO readpast_results (task_id, attempt, results) VALUES (?, ?, ?)
		ON CONFLICT DO NOTHING`, a.TaskID, attempt, a.Results)
	if err != nil {
		return fmt.Errorf("writing the result output of task %d: %w", a.TaskID, err)
	}
	return nil
}

// deleteResults deletes the result output of tasks being deleted, in one
// statement by the table's key.
func deleteResults(tx *sql.Tx, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return err
	}
	_, err = tx.Exec(`DELETE FROM readpast_results WHERE task_id IN (SELECT value FROM json_each(?))`, string(list))
	return err
}

// TaskResults implements queue.ResultStore.
func (s *Store) TaskResults(ctx context.Context, taskID int64) ([]queue.AttemptOutput, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT attempt, results FROM readpast_results WHERE task_id = ? ORDER BY attempt`, taskID)
	if err != nil {
		return nil, fmt.Errorf("reading the result output of task %d: %w", taskID, err)
	}
	defer rows.Close()
	var out []queue.AttemptOutput
	for rows.Next() {
		var o queue.AttemptOutput
		if err := rows.Scan(&o.Attempt, &o.Results); err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, rows.Err()
}
