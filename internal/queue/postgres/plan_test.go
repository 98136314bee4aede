package postgres

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"readpast/internal/queue"
)

// TestClaimUsesThePartialIndexes checks SPEC §4.5 on PostgreSQL: with a long
// history of finished tasks, the claim's plan reads the partial indexes of
// ready tasks (readpast_tasks_ready_target, readpast_tasks_ready_grouped_target) and never
// scans the table, also once PL/pgSQL has switched to a generic plan, and is
// never JIT-compiled. The plans come from auto_explain, which logs the
// statements the function runs.
func TestClaimUsesThePartialIndexes(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := storeWithHistory(t, ctx, 50)
	if _, err := s.pool.Exec(ctx, `ANALYZE readpast_tasks`); err != nil {
		t.Fatal(err)
	}

	conn, plans := explainingConn(t, ctx, s)
	// Without grouped tasks the claim takes its one-statement path; with them,
	// the plan path. More calls than the plan cache's five custom plans each, so
	// the last ones run generic plans.
	for _, path := range []struct{ marker, indexes string }{
		{"LIMIT counts.k FOR UPDATE OF t SKIP LOCKED", "readpast_tasks_ready_target "},
		{"WITH RECURSIVE grp", "readpast_tasks_ready_grouped_target"},
	} {
		if path.marker == "WITH RECURSIVE grp" {
			grouped := make([]queue.NewTask, 20)
			for i := range grouped {
				grouped[i] = queue.NewTask{Body: "SELECT 1", Group: fmt.Sprintf("g%d", i%4)}
			}
			if _, err := checked(s).Enqueue(ctx, grouped); err != nil {
				t.Fatal(err)
			}
		}
		for i := 0; i < 8; i++ {
			plans.reset()
			rows, err := conn.Query(ctx, claimSQL, queue.DefaultQueue, "plan-test", 2, time.Minute.Microseconds(), []string(nil))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := scanTasks(rows); err != nil {
				t.Fatal(err)
			}
			scan := plans.find(path.marker)
			if scan == "" {
				t.Fatalf("claim %d: auto_explain logged no plan with %q; got:\n%s", i, path.marker, plans.all())
			}
			plans.noJIT(t)
			if !strings.Contains(scan, path.indexes) || strings.Contains(scan, "Seq Scan on readpast_tasks") {
				t.Fatalf("claim %d: the claim does not read %s:\n%s", i, path.indexes, scan)
			}
			if i == 7 {
				t.Logf("plan:\n%s", scan)
			}
		}
	}
}

// The claim of one queue never scans the table because of another queue's
// backlog: with queue q holding 20,000 delayed tasks and queue other 20,000
// tasks of a full group, the planner (assuming queue, delay and group
// independent) once judged that a scan would find "a due delayed task of q"
// or "a grouped task of q" within a few rows, and read all 40,000 for each
// claim. The claim's probes read the first row in their index's order, which
// no scan can give cheaply, in custom and in generic plans alike.
func TestClaimIgnoresOtherQueuesBacklogs(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := migratedStore(t, ctx)
	if _, err := s.pool.Exec(ctx, `INSERT INTO readpast_queues (name) VALUES ('q'), ('other');
		INSERT INTO readpast_groups (name, running) VALUES ('full', 1);
		INSERT INTO readpast_tasks (queue, body, priority, available_at, delayed)
		SELECT 'q', 'SELECT 1', 0, now() + interval '1 day', true FROM generate_series(1, 20000);
		INSERT INTO readpast_tasks (queue, body, priority, group_name)
		SELECT 'other', 'SELECT 1', 1, 'full' FROM generate_series(1, 20000);
		INSERT INTO readpast_tasks (queue, body, priority) SELECT 'q', 'SELECT 1', 5 FROM generate_series(1, 100);
		ANALYZE readpast_tasks`); err != nil {
		t.Fatal(err)
	}
	conn, plans := explainingConn(t, ctx, s)
	for i := 0; i < 8; i++ {
		plans.reset()
		rows, err := conn.Query(ctx, claimSQL, "q", "plan-test", 1, time.Minute.Microseconds(), []string(nil))
		if err != nil {
			t.Fatal(err)
		}
		got, err := scanTasks(rows)
		if err != nil || len(got) != 1 || got[0].Priority != 5 {
			t.Fatalf("claim %d: %d tasks (%v), want one of the ready ones", i, len(got), err)
		}
		if all := plans.all(); strings.Contains(all, "Seq Scan on readpast_tasks") {
			t.Fatalf("claim %d scanned the table:\n%s", i, all)
		}
	}
}

// Finishing finds the tasks by primary key even on a table never analyzed,
// where the planner takes the partial index of running tasks for tiny (under
// load it is mostly entries of tasks that ran already), reads nothing of the
// history of finished tasks, and never JIT-compiles.
func TestFinishFindsTasksByPrimaryKey(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// History enough that reading the whole table costs more than index
	// lookups, and no ANALYZE.
	s := storeWithHistory(t, ctx, 200)
	claimed, err := checked(s).Claim(ctx, queue.ClaimParams{Queue: queue.DefaultQueue, Owner: "plan-test", Limit: 100, LeaseDuration: time.Minute})
	if err != nil || len(claimed) != 100 {
		t.Fatalf("claim: %d tasks, %v", len(claimed), err)
	}
	conn, plans := explainingConn(t, ctx, s)
	for i := 0; i < 8; i++ { // past the plan cache's five custom plans
		plans.reset()
		var attempts []queue.Attempt
		for _, c := range claimed[i*10 : i*10+10] {
			attempts = append(attempts, queue.Attempt{Lease: c.Lease(), Outcome: queue.OutcomeSucceeded,
				StartedAt: time.Now(), FinishedAt: time.Now()})
		}
		res, err := endAttempts(ctx, conn, modeFinish, attempts)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil || r.State != queue.StateSucceeded {
				t.Fatalf("finish %d: task %d: %s, %v", i, r.TaskID, r.State, r.Err)
			}
		}
		// The update that ends the tasks is a nested loop over the attempts,
		// sorted by id, probing the primary key for each: so it locks them in
		// id order (TestFinishLocksTasksInIDOrder), and never reads the index
		// of running tasks.
		update := plans.find("WITH a AS MATERIALIZED")
		if update == "" {
			t.Fatalf("finish %d: auto_explain logged no plan for the update; got:\n%s", i, plans.all())
		}
		if !strings.Contains(update, "Index Scan using readpast_tasks_pkey") || strings.Contains(update, "readpast_tasks_running") ||
			strings.Contains(update, "Hash Join") || strings.Contains(update, "Merge Join") ||
			!regexp.MustCompile(`Nested Loop[^\n]*\n\s*(Output:[^\n]*\n\s*)?->  CTE Scan on a`).MatchString(update) {
			t.Fatalf("finish %d: the update is not a nested loop over the attempts probing the primary key:\n%s", i, update)
		}
		// A plain batch's counts are written in the same statement, after its
		// rollups: the counts' insert reads the rollups' rows first, so it
		// takes the rollup rows before the count rows, as a finish with
		// chains does in its later call (migrations/*/000001_baseline).
		if !regexp.MustCompile(`CTE counted\n(?:[^\n]*\n)*?\s*->  CTE Scan on rolled`).MatchString(update) {
			t.Fatalf("finish %d: the counts are not written after the rollups:\n%s", i, update)
		}
		if i == 7 {
			t.Logf("plan:\n%s", update)
		}
		// Nothing the finish runs reads history: the finished counts come from
		// the rows it updated (a read-back once scanned every finished task),
		// and the batch's chains and groups are found by primary key, not by
		// the partial indexes of every task of a chain or group ever run.
		for _, plan := range strings.Split(plans.all(), "\n---\n") {
			for _, history := range []string{"readpast_tasks_finished", "readpast_tasks_chain", "readpast_tasks_group", "Seq Scan on readpast_tasks"} {
				if strings.Contains(plan, history) {
					t.Fatalf("finish %d: a statement of the finish reads %s:\n%s", i, history, plan)
				}
			}
		}
		plans.noJIT(t)
	}
	// A reclaim (as a batch with chains or groups) locks its tasks first, in
	// its own statement: by primary key too. These leases have not expired,
	// so it ends none of them.
	var live []queue.Attempt
	for _, c := range claimed[80:90] {
		live = append(live, queue.Attempt{Lease: c.Lease(), Outcome: queue.OutcomeLost, StartedAt: time.Now(), FinishedAt: time.Now()})
	}
	for i := 0; i < 8; i++ {
		plans.reset()
		res, err := endAttempts(ctx, conn, modeReclaim, live)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.State != "" {
				t.Fatalf("reclaim %d: task %d with a live lease ended %s", i, r.TaskID, r.State)
			}
		}
		lookup := plans.find("FOR UPDATE OF x SKIP LOCKED")
		if lookup == "" {
			t.Fatalf("reclaim %d: auto_explain logged no plan for the lease lookup; got:\n%s", i, plans.all())
		}
		if !strings.Contains(lookup, "readpast_tasks_pkey") || strings.Contains(lookup, "readpast_tasks_running") ||
			strings.Contains(lookup, "Seq Scan on readpast_tasks") {
			t.Fatalf("reclaim %d: the lease lookup does not go by primary key:\n%s", i, lookup)
		}
		plans.noJIT(t)
	}
}

// storeWithHistory returns a migrated store holding 20,000 finished tasks of
// history and then `pending` new ones in the default queue.
func storeWithHistory(t *testing.T, ctx context.Context, pending int) *Store {
	t.Helper()
	s := migratedStore(t, ctx)
	if _, err := s.pool.Exec(ctx, `INSERT INTO readpast_tasks (queue, body, state, finished_at)
		SELECT 'default', 'SELECT 1', 'succeeded', now() FROM generate_series(1, 20000)`); err != nil {
		t.Fatal(err)
	}
	tasks := make([]queue.NewTask, pending)
	for i := range tasks {
		tasks[i] = queue.NewTask{Body: "SELECT 1"}
	}
	if _, err := checked(s).Enqueue(ctx, tasks); err != nil {
		t.Fatal(err)
	}
	return s
}

// explainedPlans collects what auto_explain logs on one connection.
type explainedPlans struct {
	mu    sync.Mutex
	plans []string
}

func (p *explainedPlans) add(plan string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.plans = append(p.plans, plan)
}

func (p *explainedPlans) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.plans = nil
}

// find returns the last plan whose text holds marker, or "".
func (p *explainedPlans) find(marker string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	found := ""
	for _, plan := range p.plans {
		if strings.Contains(plan, marker) {
			found = plan
		}
	}
	return found
}

func (p *explainedPlans) all() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.plans, "\n---\n")
}

// noJIT fails when a statement inside the functions was JIT-compiled (the
// calling statement is the client's: with jit_above_cost = 0 it is compiled).
func (p *explainedPlans) noJIT(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, plan := range p.plans {
		caller := strings.Contains(plan, "FROM readpast_claim(") || strings.Contains(plan, "FROM readpast_end_attempts(")
		if strings.Contains(plan, "JIT:") && !caller {
			t.Fatalf("a statement of the hot path was JIT-compiled:\n%s", plan)
		}
	}
}

// explainingConn opens a connection on which auto_explain logs the plan of
// every statement, nested ones included, to the returned collector. JIT is made
// as eager as it gets (jit_above_cost = 0), so a function that does not turn it
// off shows "JIT:" in its plans wherever the server can JIT at all.
func explainingConn(t *testing.T, ctx context.Context, s *Store) (*pgx.Conn, *explainedPlans) {
	t.Helper()
	plans := &explainedPlans{}
	cfg := s.conn.Copy()
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { plans.add(n.Message) }
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	for _, set := range []string{`LOAD 'auto_explain'`, `SET auto_explain.log_min_duration = 0`,
		`SET auto_explain.log_nested_statements = on`, `SET client_min_messages = log`,
		`SET jit_above_cost = 0`, `SET jit_inline_above_cost = 0`, `SET jit_optimize_above_cost = 0`} {
		if _, err := conn.Exec(ctx, set); err != nil {
			t.Skipf("auto_explain is not available (%v)", err)
		}
	}
	return conn, plans
}
