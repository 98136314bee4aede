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

// HasClaimHook reports whether ctx carries a claim hook, for dialects that claim
// in one batch and must switch to an explicit transaction to run the hook.
func HasClaimHook(ctx context.Context) bool {
	fn, ok := ctx.Value(claimHookKey{}).(func())
	return ok && fn != nil
}

type commitHookKey struct{}

// WithCommitHook returns a context under which RunTransactional calls fn after
// the body and the completion ran and before the commit: the window where a
// dying worker must leave no effect behind. Tests use it; nothing else does.
func WithCommitHook(ctx context.Context, fn func()) context.Context {
	return context.WithValue(ctx, commitHookKey{}, fn)
}

// RunCommitHook calls the hook set by WithCommitHook, if any.
func RunCommitHook(ctx context.Context) {
	if fn, ok := ctx.Value(commitHookKey{}).(func()); ok && fn != nil {
		fn()
	}
}
