package queue

import (
	"context"

	"readpast/internal/resultset"
)

// MaxResultRows bounds a queue's result_rows: the rows of result sets one
// attempt keeps (resultset.MaxRows, which the executors cap at).
const MaxResultRows = resultset.MaxRows

// AttemptOutput is the result output one attempt kept.
type AttemptOutput struct {
	Attempt int
	Results string // resultset.Output, encoded
}

// ResultStore reads the result output attempts kept (docs/QUEUE.md, "Result
// output"). Finish and Release write it with the attempt's log row, and it
// goes with that row: purged by retention with the execution log, deleted
// with a deleted task's log rows.
type ResultStore interface {
	// TaskResults returns the result output of one task's attempts that
	// kept any, oldest first, by the log's index on task_id: a task's
	// attempts, never the history.
	TaskResults(ctx context.Context, taskID int64) ([]AttemptOutput, error)
}
