package queuetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/testenv"
)

// Bulk operations (queue.BulkStore): the row that a node claims and advances
// batch by batch, the deletion of one finished task, and the bounded count.
var bulkTests = map[string]func(*testing.T, Harness){
	// A bulk operation is created with its audit row (selection and count),
	// its cursor past the newest task; one node claims it; its batches add up;
	// its end is audited with the counts, and nobody claims it again.
	"create_claim_advance_finish": func(t *testing.T, h Harness) {
		b := setup(t, h)
		ids := b.enqueue(t, queue.NewTask{Queue: "etl", Body: "SELECT 1"}, queue.NewTask{Queue: "etl", Body: "SELECT 2"})
		sel := queue.BulkSelection{Filter: &queue.TaskFilter{Queue: "etl", State: queue.StatePending}}
		id, err := b.s.CreateBulk(b.ctx, queue.NewBulk{Action: queue.BulkCancel, Selection: sel, Matched: 2, Actor: "operator:ann"})
		require.NoError(t, err)
		op, err := b.s.GetBulk(b.ctx, id)
		require.NoError(t, err)
		require.Equal(t, queue.BulkCancel, op.Action)
		require.Equal(t, ids[1]+1, op.Cursor, "the cursor starts past the newest task")
		require.Equal(t, int64(2), op.Matched)
		require.Equal(t, "operator:ann", op.CreatedBy)
		require.False(t, op.Finished())
		back, err := queue.ParseBulkSelection(op.Selection)
		require.NoError(t, err)
		require.Equal(t, sel, back)

		rows, err := b.s.Audit(b.ctx, queue.AuditQuery{Limit: 1})
		require.NoError(t, err)
		require.Equal(t, "operator:ann bulk_cancel "+fmt.Sprintf("bulk %d", id), rows[0].Actor+" "+rows[0].Action+" "+rows[0].Target)
		require.Equal(t, `{"filter":{"state":"pending","queue":"etl"}} matching 2`, rows[0].Detail)

		got, err := b.s.ClaimBulk(b.ctx, "node-a", time.Minute)
		require.NoError(t, err)
		require.NotNil(t, got)
		require.Equal(t, id, got.ID)
		require.Equal(t, "node-a", got.LeaseOwner)
		require.NotNil(t, got.LeaseExpiresAt)
		other, err := b.s.ClaimBulk(b.ctx, "node-b", time.Minute)
		require.NoError(t, err)
		require.Nil(t, other, "a leased operation is not claimed twice")

		require.NoError(t, b.s.AdvanceBulk(b.ctx, queue.BulkAdvance{ID: id, Token: got.LeaseToken, Cursor: ids[1], Done: 1, Lease: time.Minute}))
		require.NoError(t, b.s.AdvanceBulk(b.ctx, queue.BulkAdvance{ID: id, Token: got.LeaseToken, Cursor: ids[0], Done: 0, Skipped: 1, Lease: time.Minute}))
		op, err = b.s.GetBulk(b.ctx, id)
		require.NoError(t, err)
		require.Equal(t, ids[0], op.Cursor)
		require.Equal(t, [2]int64{1, 1}, [2]int64{op.Done, op.Skipped})
		require.NoError(t, b.s.AdvanceBulk(b.ctx, queue.BulkAdvance{ID: id, Token: got.LeaseToken, Cursor: 0, Finished: true}))
		op, err = b.s.GetBulk(b.ctx, id)
		require.NoError(t, err)
		require.True(t, op.Finished())
		require.Nil(t, op.LeaseExpiresAt)
		require.ErrorIs(t, b.s.AdvanceBulk(b.ctx, queue.BulkAdvance{ID: id, Token: got.LeaseToken, Finished: true}), queue.ErrLeaseLost,
			"a finished operation takes no more batches")
		again, err := b.s.ClaimBulk(b.ctx, "node-b", time.Minute)
		require.NoError(t, err)
		require.Nil(t, again, "a finished operation is not claimed")

		rows, err = b.s.Audit(b.ctx, queue.AuditQuery{Limit: 1})
		require.NoError(t, err)
		require.Equal(t, "operator:ann bulk_cancel_done "+fmt.Sprintf("bulk %d", id), rows[0].Actor+" "+rows[0].Action+" "+rows[0].Target)
		require.Equal(t, queue.BulkDoneDetail(1, 1, ""), rows[0].Detail)
	},
	// A node that stops (its lease runs out) leaves the operation where its
	// last batch put it: another node takes it over from that cursor, with a
	// new token, and the first node's late batch changes nothing.
	"lease_taken_over_from_the_cursor": func(t *testing.T, h Harness) {
		b := setup(t, h)
		id, err := b.s.CreateBulk(b.ctx, queue.NewBulk{Action: queue.BulkRetry, Selection: queue.BulkSelection{IDs: []int64{5, 6, 7}},
			Matched: 3, Actor: "operator:ann"})
		require.NoError(t, err)
		a, err := b.s.ClaimBulk(b.ctx, "node-a", 300*time.Millisecond)
		require.NoError(t, err)
		require.NotNil(t, a)
		require.NoError(t, b.s.AdvanceBulk(b.ctx, queue.BulkAdvance{ID: id, Token: a.LeaseToken, Cursor: 7, Done: 1, Lease: 300 * time.Millisecond}))
		var got *queue.BulkOp
		require.Eventually(t, func() bool {
			got, err = b.s.ClaimBulk(b.ctx, "node-b", time.Minute)
			require.NoError(t, err)
			return got != nil
		}, 30*time.Second, 100*time.Millisecond, "the lease runs out and another node claims")
		require.Equal(t, id, got.ID)
		require.Equal(t, "node-b", got.LeaseOwner)
		require.Equal(t, int64(7), got.Cursor, "it goes on from the last batch")
		require.Equal(t, int64(1), got.Done)
		require.NotEqual(t, a.LeaseToken, got.LeaseToken)
		require.ErrorIs(t, b.s.AdvanceBulk(b.ctx, queue.BulkAdvance{ID: id, Token: a.LeaseToken, Cursor: 6, Done: 1, Lease: time.Minute}),
			queue.ErrLeaseLost)
		op, err := b.s.GetBulk(b.ctx, id)
		require.NoError(t, err)
		require.Equal(t, int64(7), op.Cursor, "the lost lease's batch changed nothing")
	},
	// Bulks pages newest first by the id cursor; GetBulk of none is ErrNotFound.
	"pages_and_not_found": func(t *testing.T, h Harness) {
		b := setup(t, h)
		var ids []int64
		for i := range 5 {
			id, err := b.s.CreateBulk(b.ctx, queue.NewBulk{Action: queue.BulkDelete,
				Selection: queue.BulkSelection{IDs: []int64{int64(i + 1)}}, Actor: "operator:ann"})
			require.NoError(t, err)
			ids = append(ids, id)
		}
		first, err := b.s.Bulks(b.ctx, 0, 3)
		require.NoError(t, err)
		require.Len(t, first, 3)
		require.Equal(t, ids[4], first[0].ID)
		rest, err := b.s.Bulks(b.ctx, first[2].ID, 3)
		require.NoError(t, err)
		require.Len(t, rest, 2)
		require.Equal(t, ids[0], rest[1].ID)
		_, err = b.s.GetBulk(b.ctx, ids[4]+100)
		require.ErrorIs(t, err, queue.ErrNotFound)
	},
	// A finished task is deleted with its log rows, the finished count
	// shrinks, and the delete is audited; an unfinished task is refused, a
	// missing one is not found.
	"delete_task": func(t *testing.T, h Harness) {
		b := setup(t, h)
		ids := b.enqueue(t, queue.NewTask{Queue: "del", Body: "SELECT 1"}, queue.NewTask{Queue: "del", Body: "SELECT 2"})
		got := b.claim(t, "del", 1)
		require.Len(t, got, 1)
		b.finish(t, got[0], queue.OutcomeSucceeded, "")
		done := got[0].ID
		other := ids[0] + ids[1] - done
		recs, err := b.s.TaskAttempts(b.ctx, done)
		require.NoError(t, err)
		require.Len(t, recs, 1)
		require.Equal(t, int64(1), queueCount(t, b, "del", queue.StateSucceeded))

		err = b.s.DeleteTask(b.ctx, other, "operator:ann")
		require.ErrorIs(t, err, queue.ErrInvalidState, "a pending task is not deleted")
		require.NoError(t, b.s.DeleteTask(b.ctx, done, "operator:ann"))
		_, err = b.s.Get(b.ctx, done)
		require.ErrorIs(t, err, queue.ErrNotFound)
		recs, err = b.s.TaskAttempts(b.ctx, done)
		require.NoError(t, err)
		require.Empty(t, recs, "its log rows went with it")
		require.Equal(t, int64(0), queueCount(t, b, "del", queue.StateSucceeded), "the finished count shrank")
		require.ErrorIs(t, b.s.DeleteTask(b.ctx, done, "operator:ann"), queue.ErrNotFound)
		rows, err := b.s.Audit(b.ctx, queue.AuditQuery{Limit: 1})
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("operator:ann delete task %d succeeded", done), rows[0].Actor+" "+rows[0].Action+" "+rows[0].Target+" "+rows[0].Detail)
		require.Equal(t, queue.StatePending, b.get(t, other).State)
	},
	// CountTasks counts what List pages through, by each filter, up to max.
	"count_tasks": func(t *testing.T, h Harness) {
		b := setup(t, h)
		var tasks []queue.NewTask
		for i := range 12 {
			tasks = append(tasks, queue.NewTask{Queue: fmt.Sprintf("c%d", i%2), Body: "SELECT 1", MaxAttempts: 1, Group: map[bool]string{true: "cg"}[i%2 == 1 && i < 6]})
		}
		b.enqueue(t, tasks...)
		got := b.claim(t, "c0", 2)
		require.Len(t, got, 2)
		b.finish(t, got[0], queue.OutcomeFailed, "boom")
		for _, c := range []struct {
			p    queue.ListParams
			max  int
			want int64
		}{
			{queue.ListParams{}, 100, 12},
			{queue.ListParams{}, 5, 5},
			{queue.ListParams{Queue: "c0"}, 100, 6},
			{queue.ListParams{Queue: "c0", State: queue.StatePending}, 100, 4},
			{queue.ListParams{State: queue.StateFailed}, 100, 1},
			{queue.ListParams{State: queue.StateRunning}, 100, 1},
			{queue.ListParams{Group: "cg"}, 100, 3},
			{queue.ListParams{Queue: "none"}, 100, 0},
		} {
			n, err := b.s.CountTasks(b.ctx, c.p, c.max)
			require.NoError(t, err)
			require.Equal(t, c.want, n, "%+v up to %d", c.p, c.max)
		}
	},
	// A text search reads a window of the filter's newest tasks and matches
	// their bodies as written (wildcards stand for themselves, ASCII case is
	// ignored on SQLite and PostgreSQL), and says where it stopped so that
	// the next page goes on below; the count with a text counts within max.
	"search_by_text_within_a_window": func(t *testing.T, h Harness) {
		b := setup(t, h)
		var tasks []queue.NewTask
		for i := range 30 {
			body := fmt.Sprintf("SELECT %d -- plain", i)
			if i%3 == 0 {
				body = fmt.Sprintf("EXEC dbo.load_Partition @p = %d", i)
			}
			tasks = append(tasks, queue.NewTask{Queue: "s", Body: body, Group: map[bool]string{true: "sg"}[i%2 == 0]})
		}
		tasks = append(tasks, queue.NewTask{Queue: "s", Body: "SELECT '50% [done]_x'"}, queue.NewTask{Queue: "other", Body: "EXEC dbo.load_partition @p = 99"})
		ids := b.enqueue(t, tasks...)

		got, scanned, err := b.s.Search(b.ctx, queue.ListParams{Queue: "s", Text: "load_partition", Limit: 100}, 1000)
		require.NoError(t, err)
		require.Len(t, got, 10, "every tenth-of-three body of queue s, none of queue other")
		require.Zero(t, scanned, "the window reached the oldest task")
		for i := 1; i < len(got); i++ {
			require.Less(t, got[i].ID, got[i-1].ID, "newest first")
		}
		if h.Dialect != testenv.SQLServer { // SQL Server matches by the database's collation
			require.Equal(t, ids[27], got[0].ID, "ASCII case is ignored")
		}

		// A window of 10 reads the 10 newest tasks of the filter only, and says where it stopped.
		got, scanned, err = b.s.Search(b.ctx, queue.ListParams{Queue: "s", Text: "load_partition", Limit: 100}, 10)
		require.NoError(t, err)
		require.Equal(t, ids[21], scanned, "the window's lowest id")
		require.Len(t, got, 3, "ids 30, 27, 24 and 21 are in the window; 30 is the literal one")
		next, scanned, err := b.s.Search(b.ctx, queue.ListParams{Queue: "s", Text: "load_partition", Limit: 100, Before: scanned}, 10)
		require.NoError(t, err)
		require.Equal(t, ids[11], scanned)
		require.Len(t, next, 3)
		require.Less(t, next[0].ID, got[len(got)-1].ID)

		// Wildcards are text; a group's every state merges per state.
		lit, _, err := b.s.Search(b.ctx, queue.ListParams{Text: "50% [done]_", Limit: 10}, 1000)
		require.NoError(t, err)
		require.Len(t, lit, 1)
		require.Equal(t, ids[30], lit[0].ID)
		none, _, err := b.s.Search(b.ctx, queue.ListParams{Text: "50%%", Limit: 10}, 1000)
		require.NoError(t, err)
		require.Empty(t, none)
		grouped, _, err := b.s.Search(b.ctx, queue.ListParams{Group: "sg", Text: "load_partition", Limit: 100}, 1000)
		require.NoError(t, err)
		require.Len(t, grouped, 5)

		n, err := b.s.CountTasks(b.ctx, queue.ListParams{Queue: "s", Text: "load_partition"}, 1000)
		require.NoError(t, err)
		require.Equal(t, int64(10), n)
		_, _, err = b.s.Search(b.ctx, queue.ListParams{Text: ""}, 10)
		require.True(t, queue.IsValidation(err))
		_, err = b.s.List(b.ctx, queue.ListParams{Text: "x"})
		require.True(t, queue.IsValidation(err), "List does not search")
	},
	// A task's optional name is stored as given, read back by every read,
	// searched with the body, and refused past 200 characters or with a
	// control character; a duplicate of a unique key keeps the first task's.
	"task_name": func(t *testing.T, h Harness) {
		b := setup(t, h)
		long := strings.Repeat("é", queue.MaxTaskName)
		ids := b.enqueue(t, queue.NewTask{Queue: "n", Body: "SELECT 1", Name: "Nightly load: orders"},
			queue.NewTask{Queue: "n", Body: "SELECT 2"}, queue.NewTask{Queue: "n", Body: "SELECT 3", Name: long, UniqueKey: "k"})
		require.Equal(t, "Nightly load: orders", b.get(t, ids[0]).Name)
		require.Empty(t, b.get(t, ids[1]).Name)
		require.Equal(t, long, b.get(t, ids[2]).Name, "200 characters of two bytes each")
		dup := b.enqueue(t, queue.NewTask{Queue: "n", Body: "SELECT 4", Name: "other", UniqueKey: "k"})
		require.Equal(t, ids[2], dup[0])
		require.Equal(t, long, b.get(t, ids[2]).Name, "a duplicate renames nothing")
		list, err := b.s.List(b.ctx, queue.ListParams{Queue: "n"})
		require.NoError(t, err)
		require.Equal(t, "Nightly load: orders", list[len(list)-1].Name)
		claimed := b.claim(t, "n", 3)
		require.Equal(t, "Nightly load: orders", claimed[0].Name, "a claim reads it too")
		found, _, err := b.s.Search(b.ctx, queue.ListParams{Queue: "n", Text: "load: ORD", Limit: 10}, 100)
		require.NoError(t, err)
		if h.Dialect != testenv.SQLServer { // SQL Server matches by the database's collation
			require.Len(t, found, 1)
			require.Equal(t, ids[0], found[0].ID, "the name is searched")
		}
		n, err := b.s.CountTasks(b.ctx, queue.ListParams{Queue: "n", Text: "Nightly load"}, 100)
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
		for _, bad := range []string{long + "x", "two\nlines", "nul\x00", " "} {
			_, err := b.s.Enqueue(b.ctx, []queue.NewTask{{Body: "SELECT 1", Name: bad}})
			require.True(t, queue.IsValidation(err), "name %q: %v", bad, err)
		}
	},
	// The checks shared by every dialect refuse bad input before a store
	// writes anything.
	"refuses_bad_input": func(t *testing.T, h Harness) {
		b := setup(t, h)
		for _, nb := range []queue.NewBulk{
			{Action: "drop", Selection: queue.BulkSelection{IDs: []int64{1}}, Actor: "a"},
			{Action: queue.BulkCancel, Actor: "a"},
			{Action: queue.BulkCancel, Selection: queue.BulkSelection{IDs: []int64{1}, Filter: &queue.TaskFilter{}}, Actor: "a"},
			{Action: queue.BulkCancel, Selection: queue.BulkSelection{IDs: []int64{0}}, Actor: "a"},
			{Action: queue.BulkCancel, Selection: queue.BulkSelection{Filter: &queue.TaskFilter{State: "done"}}, Actor: "a"},
			{Action: queue.BulkCancel, Selection: queue.BulkSelection{Filter: &queue.TaskFilter{}}},
		} {
			_, err := b.s.CreateBulk(b.ctx, nb)
			require.True(t, queue.IsValidation(err), "%+v: %v", nb, err)
		}
		_, err := b.s.ClaimBulk(b.ctx, "", time.Minute)
		require.True(t, queue.IsValidation(err))
		require.True(t, queue.IsValidation(b.s.AdvanceBulk(b.ctx, queue.BulkAdvance{ID: 1, Token: 1})))
		require.True(t, queue.IsValidation(b.s.DeleteTask(b.ctx, 0, "a")))
		_, err = b.s.CountTasks(b.ctx, queue.ListParams{}, 0)
		require.True(t, queue.IsValidation(err))
		_, err = b.s.Bulks(b.ctx, 0, queue.MaxBulkPage+1)
		require.True(t, queue.IsValidation(err))
		ops, err := b.s.Bulks(b.ctx, 0, 0)
		require.NoError(t, err)
		require.Empty(t, ops, "nothing was written")
	},
	// The writes a bulk operation makes besides the one-task cancel
	// (nonblocking's claimer_skips_an_open_cancel): a retry, a delete and the
	// advance of the operation's row, each held open, never make a claimer
	// wait (SPEC §4.2).
	"claimer_skips_an_open_retry":   func(t *testing.T, h Harness) { heldBulkWriterTest(t, h, queue.HoldRetry) },
	"claimer_skips_an_open_delete":  func(t *testing.T, h Harness) { heldBulkWriterTest(t, h, queue.HoldDelete) },
	"claimer_skips_an_open_advance": func(t *testing.T, h Harness) { heldBulkWriterTest(t, h, queue.HoldBulk) },
}

// queueCount is the queue's count of tasks in state st.
func queueCount(t *testing.T, b bundle, name string, st queue.State) int64 {
	t.Helper()
	qs, err := b.s.Queues(b.ctx)
	require.NoError(t, err)
	for _, q := range qs {
		if q.Name == name {
			return q.Counts[st]
		}
	}
	return 0
}

// heldBulkWriterTest holds one bulk operation's write open (a retry of a
// failed task, the delete of a finished one, the advance of the operation)
// while claimer B claims ten free tasks of the same queue.
func heldBulkWriterTest(t *testing.T, h Harness, kind queue.HoldKind) {
	b := setup(t, h)
	if kind == queue.HoldRetry {
		// The retried task is pending again, uncommitted, in the index B
		// reads: skipped on SQL Server, waited for where READPAST is ignored.
		b.env.SkipOnBabelfish(t, testenv.BabelfishLockHints)
	}
	const q = "nbb"
	ids := b.enqueue(t, queue.NewTask{Queue: q, Body: "SELECT 0", Priority: intp(1), MaxAttempts: 1})
	got := b.claim(t, q, 1)
	require.Len(t, got, 1)
	b.finish(t, got[0], queue.OutcomeFailed, "boom")
	var free []queue.NewTask
	for i := 0; i < 10; i++ {
		free = append(free, queue.NewTask{Queue: q, Body: "SELECT 1", Priority: intp(5), UniqueKey: fmt.Sprintf("k%d", i)})
	}
	b.enqueue(t, free...)

	op := queue.HoldOp{Kind: kind, TaskID: ids[0], Actor: "A"}
	if kind == queue.HoldBulk {
		id, err := b.s.CreateBulk(b.ctx, queue.NewBulk{Action: queue.BulkCancel, Selection: queue.BulkSelection{Filter: &queue.TaskFilter{Queue: q}},
			Matched: 11, Actor: "A"})
		require.NoError(t, err)
		c, err := b.s.ClaimBulk(b.ctx, "A", time.Minute)
		require.NoError(t, err)
		op.Bulk = queue.BulkAdvance{ID: id, Token: c.LeaseToken, Cursor: ids[0], Done: 5, Lease: time.Minute}
	}
	a, err := b.s.Hold(b.ctx, op)
	require.NoError(t, err, "holding a %s open", kind)
	t.Cleanup(func() { _ = a.Release(context.Background()) })

	if !b.s.Capabilities().ConcurrentWriters {
		oneWriterDoesNotBlockReaders(t, b, a, q)
	} else {
		ctx, cancel := context.WithTimeout(b.ctx, noWait)
		start := time.Now()
		claimed, err := b.s.Claim(ctx, queue.ClaimParams{Queue: q, Owner: "B", Limit: 100, LeaseDuration: time.Minute})
		cancel()
		require.NoError(t, err, "claimer B must not wait for A's open %s (waited %s)", kind, time.Since(start))
		require.Len(t, claimed, 10, "B gets every free task, and not the one A's open retry made pending")
		for _, c := range claimed {
			require.NotEqual(t, ids[0], c.ID)
		}
		require.NoError(t, a.Release(b.ctx))
	}
	// Released: rolled back.
	require.Equal(t, queue.StateFailed, b.get(t, ids[0]).State, "A's %s was rolled back", kind)
	if kind == queue.HoldBulk {
		op, err := b.s.GetBulk(b.ctx, op.Bulk.ID)
		require.NoError(t, err)
		require.Zero(t, op.Done, "A's advance was rolled back")
	}
}
