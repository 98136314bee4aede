package queuetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
)

// The defaults and bounds queue.Checked applies before a dialect's store is
// called (open.Store gives every store behind it): a dialect reads the limit
// it is given, so these hold whatever the dialect.
var checkTests = map[string]func(*testing.T, Harness){
	"list_limit_defaults_to_50_and_is_bounded": func(t *testing.T, h Harness) {
		b := setup(t, h)
		tasks := make([]queue.NewTask, 60)
		for i := range tasks {
			tasks[i] = queue.NewTask{Queue: "limits", Body: "SELECT 1"}
		}
		b.enqueue(t, tasks...)
		page, err := b.s.List(b.ctx, queue.ListParams{Queue: "limits"})
		require.NoError(t, err)
		require.Len(t, page, 50, "a list without a limit gives a page of 50")
		page, err = b.s.List(b.ctx, queue.ListParams{Queue: "limits", Limit: 1000})
		require.NoError(t, err)
		require.Len(t, page, 60)
		for _, bad := range []queue.ListParams{{Limit: -1}, {Limit: 1001}, {Queue: "bad name"}, {Group: "a\x00b"}} {
			_, err := b.s.List(b.ctx, bad)
			require.True(t, queue.IsValidation(err), "list %+v must be refused, got %v", bad, err)
		}
	},
}
