package queue

import "context"

type claimHookKey struct{}

// WithClaimHook returns a context under which a Store's Claim calls fn inside its
// transaction, after the rows are claimed and before the commit. The conformance
// suite uses it to hold one claimer's transaction open while another claims; it
// has no other use.
func WithClaimHook(ctx context.Context, fn func()) context.Context {
	return context.WithValue(ctx, claimHookKey{}, fn)
}

// RunClaimHook calls the hook set by WithClaimHook, if any. Dialects call it just
// before committing a claim.
func RunClaimHook(ctx context.Context) {
	if fn, ok := ctx.Value(claimHookKey{}).(func()); ok && fn != nil {
		fn()
	}
}
