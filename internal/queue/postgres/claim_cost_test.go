package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"readpast/internal/queue"
)

// TestClaimCostIsFlatBehindAnotherTargetsBacklog: a node's claim must not
// read the ready tasks of targets it does not serve (docs/TARGETS.md, "Flat
// behind another target's backlog"; SPEC §9). Behind 10 and behind 10,000
// ready tasks of target far, more urgent than the node's own (ungrouped, and
// in a group with free slots that the node's tasks share), a node serving
// near and "" claims its tasks one at a time; the test counts what the
// server counts: the rows of readpast_tasks its index scans fetched and its
// table scans read (pg_stat_xact_user_tables.idx_tup_fetch, seq_tup_read)
// per claim. When the target was a residual predicate on the ready indexes
// (not in them), each claim fetched every row of far's ahead of near's to
// test its target, thousands behind 10,000: this test failed on it.
func TestClaimCostIsFlatBehindAnotherTargetsBacklog(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	perClaim := map[int]float64{}
	for _, far := range []int{10, 10_000} {
		perClaim[far] = entriesPerClaimBehind(t, ctx, far)
	}
	t.Logf("rows fetched or read per claim: %.1f behind 10 tasks of another target, %.1f behind 10,000", perClaim[10], perClaim[10_000])
	if perClaim[10_000] > 2*perClaim[10]+20 {
		t.Fatalf("a claim behind 10,000 ready tasks of another target fetched or read %.1f rows, behind 10 it read %.1f: it reads the other target's tasks",
			perClaim[10_000], perClaim[10])
	}
}

// entriesPerClaimBehind builds a fresh store with far ready tasks of target
// far (one in five in group shared, whose limit leaves it free) and 40 of the
// node's behind them, and returns the index entries and table rows read on
// readpast_tasks per claim of one task, over 10 claims.
func entriesPerClaimBehind(t *testing.T, ctx context.Context, far int) float64 {
	t.Helper()
	s := migratedStore(t, ctx)
	one, five := 1, 5
	var tasks []queue.NewTask
	for i := 0; i < far; i++ {
		task := queue.NewTask{Queue: "q", Body: "SELECT 1", Priority: &one, Target: "far"}
		if i%5 == 0 {
			task.Group = "shared"
		}
		tasks = append(tasks, task)
	}
	for i := 0; i < 40; i++ {
		task := queue.NewTask{Queue: "q", Body: "SELECT 1", Priority: &five, Target: []string{"near", ""}[i%2]}
		if i%4 == 0 {
			task.Group = "shared"
		}
		tasks = append(tasks, task)
	}
	for from := 0; from < len(tasks); from += 1000 {
		if _, err := checked(s).Enqueue(ctx, tasks[from:min(from+1000, len(tasks))]); err != nil {
			t.Fatal(err)
		}
	}
	if err := checked(s).SetGroupLimit(ctx, "shared", 100_000, "test"); err != nil {
		t.Fatal(err)
	}
	// The same history in both stores, so that the planner sees a table too
	// big to scan in both, as in production, and plans both claims alike.
	if _, err := s.pool.Exec(ctx, `INSERT INTO readpast_tasks (queue, body, state, finished_at)
		SELECT 'q', 'SELECT 1', 'succeeded', now() FROM generate_series(1, 20000);
		ANALYZE readpast_tasks`); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.ConnectConfig(ctx, s.conn.Copy())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	// The claims run in one transaction of one session, whose own counts
	// pg_stat_xact_user_tables shows (other sessions' counts, published at
	// their own pace, never land in it): the heap rows fetched through an
	// index, and rows read by table scans.
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	read := func() int64 {
		t.Helper()
		var n int64
		if err := tx.QueryRow(ctx, `SELECT coalesce(sum(idx_tup_fetch + seq_tup_read), 0)
			FROM pg_stat_xact_user_tables WHERE relname = 'readpast_tasks'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	const claims = 10
	before := read()
	for i := 0; i < claims; i++ {
		rows, err := tx.Query(ctx, claimSQL, "q", "n/q", 1, time.Minute.Microseconds(), []string{"near", ""})
		if err != nil {
			t.Fatal(err)
		}
		got, err := scanTasks(rows)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Target == "far" {
			t.Fatalf("claim %d behind %d: %s, want one of the node's tasks", i, far, describe(got))
		}
	}
	return float64(read()-before) / claims
}

func describe(tasks []*queue.Task) string {
	s := fmt.Sprintf("%d tasks", len(tasks))
	for _, task := range tasks {
		s += fmt.Sprintf(" (target %q, priority %d)", task.Target, task.Priority)
	}
	return s
}
