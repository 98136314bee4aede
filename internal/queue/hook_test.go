package queue

import (
	"context"
	"testing"
)

func TestHasClaimHookDoesNotRunTheHook(t *testing.T) {
	t.Parallel()
	ran := false
	ctx := WithClaimHook(context.Background(), func() { ran = true })
	if !HasClaimHook(ctx) || ran {
		t.Errorf("HasClaimHook = %v, ran = %v; want true, false", HasClaimHook(ctx), ran)
	}
	if HasClaimHook(context.Background()) {
		t.Error("HasClaimHook = true for a context without a hook")
	}
	RunClaimHook(ctx)
	if !ran {
		t.Error("RunClaimHook did not run the hook")
	}
}
