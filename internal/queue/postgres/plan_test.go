package postgres

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"readpast/internal/queue"
)

// TestClaimUsesThePartialIndex checks SPEC §4.5 on PostgreSQL: with a long
// history of finished tasks, the claim's candidate scan reads the partial index
// readpast_tasks_claim, also once PL/pgSQL has switched to a generic plan. The
// plans come from auto_explain, which logs the statements the function runs.
func TestClaimUsesThePartialIndex(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := newStore(t).(*Store)
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	// 20,000 finished tasks of history and a few pending ones.
	if _, err := s.pool.Exec(ctx, `INSERT INTO readpast_tasks (queue, body, state, finished_at)
		SELECT 'default', 'SELECT 1', 'succeeded', now() FROM generate_series(1, 20000)`); err != nil {
		t.Fatal(err)
	}
	tasks := make([]queue.NewTask, 50)
	for i := range tasks {
		tasks[i] = queue.NewTask{Body: "SELECT 1"}
	}
	if _, err := s.Enqueue(ctx, tasks); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `ANALYZE readpast_tasks`); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var plans []string
	cfg := s.conn.Copy()
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		defer mu.Unlock()
		plans = append(plans, n.Message)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, set := range []string{`LOAD 'auto_explain'`, `SET auto_explain.log_min_duration = 0`,
		`SET auto_explain.log_nested_statements = on`, `SET client_min_messages = log`} {
		if _, err := conn.Exec(ctx, set); err != nil {
			t.Skipf("auto_explain is not available (%v)", err)
		}
	}
	// More calls than the plan cache's five custom plans, so the last one runs
	// the generic plan.
	for i := 0; i < 8; i++ {
		mu.Lock()
		plans = nil
		mu.Unlock()
		rows, err := conn.Query(ctx, claimSQL, queue.DefaultQueue, "plan-test", 2, time.Minute.Microseconds())
		if err != nil {
			t.Fatal(err)
		}
		got, err := scanTasks(rows)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 {
			t.Fatalf("claim %d returned %d tasks, want 2", i, len(got))
		}
		mu.Lock()
		var scan string
		for _, p := range plans {
			if strings.Contains(p, "NOT t.chain_wait") || strings.Contains(p, "FOR UPDATE OF t SKIP LOCKED") {
				scan = p
			}
		}
		mu.Unlock()
		if scan == "" {
			t.Fatalf("claim %d: auto_explain logged no plan for the candidate scan; got:\n%s", i, strings.Join(plans, "\n---\n"))
		}
		if !strings.Contains(scan, "readpast_tasks_claim") || strings.Contains(scan, "Seq Scan on readpast_tasks") {
			t.Fatalf("claim %d: the candidate scan does not use readpast_tasks_claim:\n%s", i, scan)
		}
		if i == 7 {
			t.Logf("candidate scan plan:\n%s", scan)
		}
	}
}
