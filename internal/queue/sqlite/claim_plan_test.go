package sqlite

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
)

// A node's claim reads one index range per target it serves, so the ready
// tasks of a target it does not serve are never read, however many there
// are (docs/TARGETS.md, "Flat behind another target's backlog"; SPEC §9).
// With the target after the queue in the ready indexes, every read of the
// claim's plan seeks on the target (target=? among the index's constraints)
// and reads its range in claim order (no sort), up to its LIMIT. When the
// target was the indexes' last column, the plan's constraints stopped at the
// queue (and transactional), and a claim read past every entry of another
// target ahead of its own: this test failed on it.
//
// The plans are SQLite's for the claim's own statements and arguments, on a
// store with 10,000 ready tasks of target far ahead of one of near's,
// ungrouped and in a group; the claim itself then takes near's tasks.
func TestClaimSeeksEachServedTarget(t *testing.T) {
	ctx := context.Background()
	s := migratedStore(t, ctx)
	var far []queue.NewTask
	for i := 0; i < 10_000; i++ {
		task := queue.NewTask{Queue: "q", Body: "SELECT 1", Target: "far", Priority: new(int)}
		if i%2 == 0 {
			task.Group = fmt.Sprintf("g%d", i%20)
		}
		far = append(far, task)
	}
	_, err := checked(s).Enqueue(ctx, far)
	require.NoError(t, err)
	nine := 9
	near, err := checked(s).Enqueue(ctx, []queue.NewTask{
		{Queue: "q", Body: "SELECT 1", Target: "near", Priority: &nine},
		{Queue: "q", Body: "SELECT 1", Target: "near", Priority: &nine, Group: "g0"}})
	require.NoError(t, err)

	for name, c := range map[string]struct {
		query string
		args  []any
		seek  string
	}{
		"ungrouped ready tasks":    {readyUngroupedSQL, []any{"q", 0, "near", 50}, "(queue=? AND transactional=? AND target=?)"},
		"a group's ready tasks":    {readyOfGroupSQL, []any{"q", "near", "g0", 50}, "(queue=? AND target=? AND group_name=?)"},
		"the groups of a target":   {nextGroupSQL, []any{"q", "near", ""}, "(queue=? AND target=? AND group_name>?)"},
		"the first target":         {fmt.Sprintf(readyTargetsSQL, ""), []any{"q", 0}, "(queue=? AND transactional=?)"},
		"the next target":          {fmt.Sprintf(readyTargetsSQL, "AND target > ?"), []any{"q", 0, "far"}, "(queue=? AND transactional=? AND target>?)"},
		"the next grouped target":  {fmt.Sprintf(readyGroupedTargetsSQL, "AND target > ?"), []any{"q", "far"}, "(queue=? AND target>?)"},
		"the first grouped target": {fmt.Sprintf(readyGroupedTargetsSQL, ""), []any{"q"}, "(queue=?)"},
	} {
		plan := queryPlan(t, s, c.query, c.args)
		require.Len(t, plan, 1, "%s: %q", name, plan)
		require.NotContains(t, plan[0], "TEMP B-TREE", "%s sorts its range: it reads all of it", name)
		require.Contains(t, plan[0], "SEARCH readpast_tasks USING ", name)
		require.True(t, strings.HasSuffix(plan[0], c.seek), "%s: %q does not seek %s", name, plan[0], c.seek)
	}

	got, err := checked(s).Claim(ctx, queue.ClaimParams{Queue: "q", Owner: "n/q", Limit: 5, LeaseDuration: 60e9, Targets: []string{"near", ""}})
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.ElementsMatch(t, []int64{near[0].ID, near[1].ID}, []int64{got[0].ID, got[1].ID})
}
