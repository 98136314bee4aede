package target

import (
	"context"

	"readpast/internal/resultset"
)

// WithResultRows asks the Run given ctx to keep up to rows rows of the
// body's result sets (resultset.New: with the columns and bytes it bounds)
// in Result.Output; 0 keeps none, as a context without it.
func WithResultRows(ctx context.Context, rows int) context.Context {
	return resultset.WithRows(ctx, rows)
}

// captureFor is the capture a Run keeps its result sets in: nil (keep
// nothing, at no cost) unless ctx asked for rows.
func captureFor(ctx context.Context) *resultset.Capture { return resultset.FromContext(ctx) }
