package queuetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
)

// farBacklog is how many ready tasks of a target the claiming node does not
// serve sit ahead of its own in targetBacklogTests: bounded, and far more
// than a claim reads.
const farBacklog = 10_000

// A node's claim reads one range per target it serves (docs/TARGETS.md,
// "Flat behind another target's backlog"). These tests check that what the
// ranges return merges in claim order, grouped or not, and that a claim of
// any target (nil) still reads every target's tasks in claim order.
var targetBacklogTests = map[string]func(*testing.T, Harness){
	"a_node_claims_its_targets_in_order_behind_another_targets_backlog": func(t *testing.T, h Harness) {
		b := setup(t, h)
		// Ahead in claim order: farBacklog ready tasks of "far", most of
		// them ungrouped, some in group g, which has room for all.
		var far []queue.NewTask
		for i := 0; i < farBacklog; i++ {
			task := queue.NewTask{Body: "far", Queue: "tf", Priority: intp(1), Target: "far"}
			if i%10 == 0 {
				task.Group = "g"
			}
			far = append(far, task)
		}
		b.enqueue(t, far...)
		err := b.s.SetGroupLimit(b.ctx, "g", 5, "op")
		require.NoError(t, err)
		// Behind them, the tasks of the targets the node serves, interleaved
		// in claim order across targets and the group.
		id := b.enqueue(t,
			queue.NewTask{Body: "a6", Queue: "tf", Priority: intp(6), Target: "a"},
			queue.NewTask{Body: "none3", Queue: "tf", Priority: intp(3)},
			queue.NewTask{Body: "a2g", Queue: "tf", Priority: intp(2), Target: "a", Group: "g"},
			queue.NewTask{Body: "b4", Queue: "tf", Priority: intp(4), Target: "b"},
			queue.NewTask{Body: "a3", Queue: "tf", Priority: intp(3), Target: "a"},
			queue.NewTask{Body: "b5g", Queue: "tf", Priority: intp(5), Target: "b", Group: "g"},
			queue.NewTask{Body: "none7", Queue: "tf", Priority: intp(7)})
		claim := func(targets []string, n int) []*queue.Task {
			t.Helper()
			got, err := b.s.Claim(b.ctx, queue.ClaimParams{Queue: "tf", Owner: "n/tf", Limit: n, LeaseDuration: time.Minute, Targets: targets})
			require.NoError(t, err)
			return got
		}
		node := []string{"a", "b", ""}
		require.Equal(t, []int64{id[2], id[1], id[4]}, ids(claim(node, 3)),
			"a2g, then none3 and a3 at priority 3 in id order: the served targets' tasks in claim order, behind 10,000 of another's")
		require.Equal(t, []int64{id[3], id[5]}, ids(claim(node, 2)), "b4, then b5g: a group's tasks of another served target")
		require.Equal(t, []int64{id[0], id[6]}, ids(claim(node, 5)), "a6, none7, and nothing of far")
		require.Empty(t, claim(node, 5), "what is left is far's")
		require.Empty(t, claim([]string{"b"}, 5))
		got := claim(nil, 3)
		require.Len(t, got, 3, "a claim of any target reads far's tasks")
		for _, task := range got {
			require.Equal(t, "far", task.Target)
		}
		require.Less(t, got[0].ID, got[1].ID, "in claim order")
		require.Equal(t, 1, got[0].Priority)
	},
	"a_claim_of_any_target_keeps_claim_order_across_targets": func(t *testing.T, h Harness) {
		b := setup(t, h)
		id := b.enqueue(t,
			queue.NewTask{Body: "x5", Queue: "ta", Priority: intp(5), Target: "x"},
			queue.NewTask{Body: "y1", Queue: "ta", Priority: intp(1), Target: "y"},
			queue.NewTask{Body: "none3", Queue: "ta", Priority: intp(3)},
			queue.NewTask{Body: "x2g", Queue: "ta", Priority: intp(2), Target: "x", Group: "h"},
			queue.NewTask{Body: "y2g", Queue: "ta", Priority: intp(2), Target: "y", Group: "h"},
			queue.NewTask{Body: "y4", Queue: "ta", Priority: intp(4), Target: "y"})
		_, err := b.s.Claim(b.ctx, queue.ClaimParams{Queue: "ta", Owner: "n/ta", Limit: 10, LeaseDuration: time.Minute, Targets: []string{"x", "x"}})
		require.ErrorAs(t, err, new(*queue.ValidationError), "a claim names each target once")
		got, err := b.s.Claim(b.ctx, queue.ClaimParams{Queue: "ta", Owner: "n/ta", Limit: 10, LeaseDuration: time.Minute})
		require.NoError(t, err)
		require.Equal(t, []int64{id[1], id[3], id[2], id[5], id[0]}, ids(got),
			"y1, x2g (group h admits one: y2g waits), none3, y4, x5: claim order over every target")
	},
}
