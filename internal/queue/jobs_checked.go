package queue

import (
	"context"
	"fmt"
	"time"
)

// The checks of the job store's reads (the jobs package checks the writes).

// Run page sizes.
const (
	DefaultRunPage = 50
	MaxRunPage     = 1000
)

// CheckRunQuery validates a page of runs and returns its effective limit.
func CheckRunQuery(q RunQuery) (int, error) {
	if err := checkName("job", "job", q.Job); err != nil {
		return 0, err
	}
	switch {
	case q.Limit == 0:
		return DefaultRunPage, nil
	case q.Limit < 0 || q.Limit > MaxRunPage:
		return 0, &ValidationError{Field: "limit", Reason: fmt.Sprintf("is %d: use 1 to %d", q.Limit, MaxRunPage)}
	}
	return q.Limit, nil
}

func (c checked) Runs(ctx context.Context, q RunQuery) ([]Run, error) {
	limit, err := CheckRunQuery(q)
	if err != nil {
		return nil, err
	}
	q.Limit = limit
	return c.Store.Runs(ctx, q)
}

func (c checked) PurgeRuns(ctx context.Context, cutoff time.Time, batch int) (int64, error) {
	if err := CheckPurge(batch); err != nil {
		return 0, err
	}
	return c.Store.PurgeRuns(ctx, cutoff, batch)
}
