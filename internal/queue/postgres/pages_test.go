package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"readpast/internal/queue"
)

// TestReadsUseIndexesNotHistory checks SPEC §9 for the task lists, the log
// pages and the queue counts on PostgreSQL: with a history of finished tasks
// and attempts, each query the store sends reads the index that holds its
// filter (the schema baseline keeps running tasks and finished states in
// separate ranges) and never scans a table, with the plan PostgreSQL makes for
// the values (custom) and the one it may switch to after five executions of a
// prepared statement (generic).
func TestReadsUseIndexesNotHistory(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := storeWithHistory(t, ctx, 50)
	if _, err := s.pool.Exec(ctx, `INSERT INTO readpast_attempts (task_id, attempt, queue, started_at, finished_at, duration_ms, outcome)
		SELECT g, 1, 'default', now(), now(), 0, 'succeeded' FROM generate_series(1, 20000) g`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `ANALYZE readpast_tasks; ANALYZE readpast_attempts`); err != nil {
		t.Fatal(err)
	}
	type query struct {
		name  string
		sql   string
		args  []any
		err   error
		index []string // each must appear in the plan
	}
	list := func(name string, p queue.ListParams, index ...string) query {
		var err error
		p.Limit, err = queue.CheckList(p) // as queue.Checked does before the store reads
		sql, args := listSQL(p)
		return query{"list " + name, sql, args, err, index}
	}
	logs := func(name string, q queue.LogQuery, index ...string) query {
		var err error
		q.Limit, err = queue.CheckLogQuery(q)
		sql, args := attemptsSQL(q)
		return query{"log " + name, sql, args, err, index}
	}
	const q = queue.DefaultQueue
	queries := []query{
		list("all", queue.ListParams{}, "readpast_tasks_pkey"),
		list("state", queue.ListParams{State: queue.StateCancelled, Before: 15000}, "readpast_tasks_list"),
		list("queue", queue.ListParams{Queue: q}, "readpast_tasks_list", "readpast_tasks_running"),
		list("queue and state", queue.ListParams{Queue: q, State: queue.StateFailed}, "readpast_tasks_list"),
		list("running", queue.ListParams{State: queue.StateRunning}, "readpast_tasks_running"),
		list("queue running", queue.ListParams{Queue: q, State: queue.StateRunning}, "readpast_tasks_running"),
		logs("task", queue.LogQuery{TaskID: 7}, "readpast_attempts_task"),
		logs("queue", queue.LogQuery{Queue: q, Before: 15000}, "readpast_attempts_list"),
		logs("outcome", queue.LogQuery{Outcome: queue.OutcomeFailed}, "readpast_attempts_list"),
		logs("queue and outcome", queue.LogQuery{Queue: q, Outcome: queue.OutcomeLost}, "readpast_attempts_list"),
		{"queue counts", queuesSQL, []any{""}, nil, []string{"readpast_tasks_list", "readpast_tasks_running"}},
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for i, qu := range queries {
		if qu.err != nil {
			t.Fatalf("%s: %v", qu.name, qu.err)
		}
		if _, err := conn.Exec(ctx, fmt.Sprintf("PREPARE plan_check_%d AS %s", i, qu.sql)); err != nil {
			t.Fatalf("%s: %v", qu.name, err)
		}
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			if _, err := conn.Exec(ctx, "SET plan_cache_mode = "+mode); err != nil {
				t.Fatal(err)
			}
			text := strings.Join(plan(t, ctx, conn, qu.name, fmt.Sprintf("EXPLAIN EXECUTE plan_check_%d(%s)", i, literals(qu.args))), "\n")
			if strings.Contains(text, "Seq Scan on readpast_tasks") || strings.Contains(text, "Seq Scan on readpast_attempts") {
				t.Fatalf("%s (%s) scans a table:\n%s", qu.name, mode, text)
			}
			for _, ix := range qu.index {
				if !strings.Contains(text, ix) {
					t.Fatalf("%s (%s) does not read %s:\n%s", qu.name, mode, ix, text)
				}
			}
		}
	}
	if _, err := conn.Exec(ctx, "RESET plan_cache_mode; DEALLOCATE ALL"); err != nil {
		t.Fatal(err)
	}
}

// plan runs an EXPLAIN and returns its lines.
func plan(t *testing.T, ctx context.Context, conn *pgxpool.Conn, name, explain string, args ...any) []string {
	t.Helper()
	rows, err := conn.Query(ctx, explain, args...)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return lines
}

// literals writes a query's arguments as SQL literals for EXECUTE.
func literals(args []any) string {
	out := make([]string, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			out[i] = literal(v)
		default:
			out[i] = fmt.Sprint(v)
		}
	}
	return strings.Join(out, ", ")
}

// TestPagesSkipOtherHistory checks SPEC §9 where the planner is tempted to
// walk the primary key newest first and filter: a page of a queue, state or
// outcome that is rare among recent rows (a quiet queue among busy ones, a
// state that a busy queue has none of) must read its own index range, not
// every newer row of the history. With a page's full columns PostgreSQL
// costed the primary key's heap order cheaper than the list index and read
// the whole history for a queue without matches (379 ms at 1M tasks). A
// group's or a schedule's page of one state read all of the group's or the
// schedule's tasks while their indexes did not hold the state.
func TestPagesSkipOtherHistory(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := migratedStore(t, ctx)
	// A busy queue's history, and a quiet queue that has rows of its own but
	// none succeeded and no log rows. The busy history is all of one group and
	// one schedule, which also have a pending task each, older than it.
	if _, err := checked(s).Enqueue(ctx, []queue.NewTask{{Queue: "quiet", Body: "SELECT 1"}, {Queue: "quiet", Body: "SELECT 1", Group: "nightly"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `
		UPDATE readpast_tasks SET schedule_name = 'nightly' WHERE queue = 'quiet';
		INSERT INTO readpast_queues (name) VALUES ('busy');
		INSERT INTO readpast_tasks (queue, body, state, attempts, finished_at, group_name, schedule_name)
		SELECT 'busy', 'SELECT 1', 'succeeded', 1, now(), 'nightly', 'nightly' FROM generate_series(1, 200000);
		INSERT INTO readpast_attempts (task_id, attempt, queue, started_at, finished_at, duration_ms, outcome)
		SELECT id, 1, queue, now(), now(), 0, 'succeeded' FROM readpast_tasks WHERE queue = 'busy'`); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"readpast_tasks", "readpast_attempts"} {
		if _, err := s.pool.Exec(ctx, "VACUUM ANALYZE "+table); err != nil {
			t.Fatal(err)
		}
	}
	lists := map[string]queue.ListParams{
		"succeeded of every queue": {State: queue.StateSucceeded, Limit: 51},
		"the quiet queue":          {Queue: "quiet", Limit: 51},
		"the quiet queue's failed": {Queue: "quiet", State: queue.StateFailed, Limit: 51},
		"a group's pending":        {Group: "nightly", State: queue.StatePending, Limit: 51},
		"a group's cancelled":      {Group: "nightly", State: queue.StateCancelled, Limit: 51},
		"a group":                  {Group: "nightly", Limit: 51},
		"a schedule's pending":     {Schedule: "nightly", State: queue.StatePending, Limit: 51},
		"a schedule's failed":      {Schedule: "nightly", State: queue.StateFailed, Limit: 51},
		"a schedule":               {Schedule: "nightly", Limit: 51},
	}
	logs := map[string]queue.LogQuery{
		"succeeded of every queue": {Outcome: queue.OutcomeSucceeded, Limit: 101},
		"the quiet queue":          {Queue: "quiet", Limit: 101},
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	// A page reads its rows by primary key and its ids from its own ranges:
	// about four buffers a row (217 for 51 tasks, 416 for 101 log rows).
	// Reading the history instead shows as rows removed by a filter or, where
	// the index's condition is not on its leading column (the list index
	// searched by state alone), as the buffers of a walk over the whole index.
	check := func(name string, limit int, sql string, args []any) {
		t.Helper()
		lines := plan(t, ctx, conn, name, "EXPLAIN (ANALYZE, BUFFERS) "+sql, args...)
		removed, buffers := 0, 0
		for i, line := range lines {
			if _, n, ok := strings.Cut(line, "Rows Removed by Filter: "); ok {
				k, _ := strconv.Atoi(strings.TrimSpace(n))
				removed += k
			}
			if _, b, ok := strings.Cut(line, "Buffers: shared "); ok && !(i > 0 && strings.TrimSpace(lines[i-1]) == "Planning:") {
				shared, _, _ := strings.Cut(b, ",") // temp and local buffers follow
				n := 0
				for _, f := range strings.Fields(shared) {
					if _, v, ok := strings.Cut(f, "="); ok {
						k, _ := strconv.Atoi(v)
						n += k
					}
				}
				buffers = max(buffers, n)
			}
		}
		if removed > 1000 || buffers > 5*limit+50 { // the list index alone is about 1,000 pages here
			t.Errorf("%s reads %d rows it does not return and %d buffers:\n%s", name, removed, buffers, strings.Join(lines, "\n"))
		}
	}
	for name, p := range lists {
		if _, err := queue.CheckList(p); err != nil {
			t.Fatal(err)
		}
		sql, args := listSQL(p)
		check("tasks: "+name, p.Limit, sql, args)
	}
	for name, q := range logs {
		if _, err := queue.CheckLogQuery(q); err != nil {
			t.Fatal(err)
		}
		sql, args := attemptsSQL(q)
		check("log: "+name, q.Limit, sql, args)
	}
}
