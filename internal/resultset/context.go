package resultset

import "context"

type rowsKey struct{}

// WithRows asks whatever runs a body with the returned context (a target's
// Run, a store's RunTransactional) to keep up to rows rows of its result
// sets; 0 keeps none, as a context without it.
func WithRows(ctx context.Context, rows int) context.Context {
	if rows <= 0 {
		return ctx
	}
	return context.WithValue(ctx, rowsKey{}, rows)
}

// FromContext is the capture a run keeps its result sets in: nil (keep
// nothing, at no cost) unless ctx asked for rows (WithRows).
func FromContext(ctx context.Context) *Capture {
	rows, _ := ctx.Value(rowsKey{}).(int)
	return New(rows)
}

// Encoded is the stored form of what c kept, "" when nothing (or c is nil).
func (c *Capture) Encoded() string {
	if o := c.Output(); o != nil {
		return o.Encode()
	}
	return ""
}
