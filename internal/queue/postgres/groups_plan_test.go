package postgres

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestGroupsPendingReadsTheGroupIndex checks SPEC §9 for the groups page on
// PostgreSQL: with a long finished history in the groups, each group's
// pending count reads its pending range of readpast_tasks_group_state, never
// the table nor the group's finished tasks.
func TestGroupsPendingReadsTheGroupIndex(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := migratedStore(t, ctx)
	if _, err := s.pool.Exec(ctx, `INSERT INTO readpast_groups (name) SELECT 'g' || g FROM generate_series(1, 20) g;
		INSERT INTO readpast_tasks (queue, body, group_name, state, finished_at)
		SELECT 'default', 'SELECT 1', 'g' || (g % 20 + 1), 'succeeded', now() FROM generate_series(1, 40000) g;
		INSERT INTO readpast_tasks (queue, body, group_name, state)
		SELECT 'default', 'SELECT 1', 'g' || (g % 20 + 1), 'pending' FROM generate_series(1, 100) g;
		ANALYZE readpast_tasks; ANALYZE readpast_groups`); err != nil {
		t.Fatal(err)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	text := strings.Join(plan(t, ctx, conn, "groups", "EXPLAIN "+groupsSQL), "\n")
	if !strings.Contains(text, "readpast_tasks_group_state") || strings.Contains(text, "Seq Scan on readpast_tasks") {
		t.Fatalf("the groups' pending counts do not read readpast_tasks_group_state:\n%s", text)
	}
	t.Logf("plan:\n%s", text)
	groups, err := s.Groups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var pending int64
	for _, g := range groups {
		pending += g.Pending
	}
	if pending != 100 {
		t.Fatalf("the groups count %d pending tasks, not 100", pending)
	}
}
