package logs

import (
	"context"

	"readpast/internal/queue"
	"readpast/internal/resultset"
)

// AttemptResults is the result output one attempt kept, in the API's JSON
// (docs/API.md, "Result output").
type AttemptResults struct {
	Attempt int             `json:"attempt"`
	Sets    []resultset.Set `json:"sets"`
	// Truncated says what the limits left out; null when nothing was.
	Truncated *string `json:"truncated"`
}

// TaskResults reads the result output of one task's attempts, oldest first.
// An output that no longer reads (written by a newer binary) is left out
// rather than failing the task's page.
func TaskResults(ctx context.Context, s queue.ResultStore, taskID int64) ([]AttemptResults, error) {
	outs, err := s.TaskResults(ctx, taskID)
	if err != nil {
		return nil, err
	}
	res := make([]AttemptResults, 0, len(outs))
	for _, o := range outs {
		d, err := resultset.Decode(o.Results)
		if err != nil {
			continue
		}
		res = append(res, AttemptResults{Attempt: o.Attempt, Sets: d.Sets, Truncated: orNull(d.Truncated)})
	}
	return res, nil
}
