package postgres

import (
	"context"

	"readpast/internal/queue"
)

const claimSQL = `SELECT ` + taskColumns + ` FROM readpast_claim($1, $2, $3, $4, $5)`

// claimArgs binds readpast_claim's parameters.
func claimArgs(p queue.ClaimParams) []any {
	return []any{p.Queue, p.Owner, p.Limit, p.LeaseDuration.Microseconds(), p.Targets}
}

// Claim implements queue.Store. The claim is one call of readpast_claim
// (docs/QUEUE.md, "Claiming"): one statement in its own implicit transaction,
// so one round trip.
func (s *Store) Claim(ctx context.Context, p queue.ClaimParams) ([]*queue.Task, error) {
	var tasks []*queue.Task
	err := s.write(ctx, func(ctx context.Context, c conn) error {
		rows, err := c.Query(ctx, claimSQL, claimArgs(p)...)
		if err == nil {
			tasks, err = scanTasks(rows)
		}
		return err
	})
	if err != nil {
		return nil, wrap(err, "claiming from queue %s", p.Queue)
	}
	return tasks, nil
}
