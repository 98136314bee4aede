package sqlserver_test

import (
	"context"
	"database/sql"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/queue/sqlserver"
	"readpast/internal/testenv"
)

// TestClaimCostIsFlatBehindAnotherTargetsBacklog: a node's claim must not
// read the ready tasks of targets it does not serve (docs/TARGETS.md, "Flat
// behind another target's backlog"; SPEC §9). Behind 10 and behind 10,000
// ready tasks of target far, more urgent than the node's own (ungrouped, and
// some in a group with free slots that the node's tasks share), a node
// serving near and "" claims its tasks one at a time; the test counts what
// the server counts per claim: under Babelfish, the entries PostgreSQL's
// scans read in the claim's ready indexes (pg_stat_user_indexes.idx_tup_read
// of readpast_tasks_ready*); on SQL Server, the claim's logical reads
// (sys.dm_exec_query_stats). When the target was a residual predicate on the
// ready indexes, a claim read every ready task of far's ahead of near's.
//
// Under Babelfish the count is the ready indexes' and not the table's:
// PostgreSQL plans the claim's last UPDATE by primary key (FORCESEEK) as a
// bitmap scan of readpast_tasks_state with a scan of the table beside it
// (its hints are not read there), which reads every pending task, of any
// target, whatever the claim's indexes do (docs/TARGETS.md).
func TestClaimCostIsFlatBehindAnotherTargetsBacklog(t *testing.T) {
	if os.Getenv(testenv.MSSQLDSNEnv) == "" {
		t.Skip(testenv.MSSQLDSNEnv + " not set: no SQL Server to run on")
	}
	perClaim := map[int]float64{}
	for _, far := range []int{10, 10_000} {
		perClaim[far] = claimReadsBehindAnotherTarget(t, far)
	}
	t.Logf("ready index entries (Babelfish) or logical reads (SQL Server) per claim: %.1f behind 10 tasks of another target, %.1f behind 10,000", perClaim[10], perClaim[10_000])
	require.LessOrEqual(t, perClaim[10_000], 2*perClaim[10]+20,
		"a claim behind 10,000 ready tasks of another target read %.1f, behind 10 it read %.1f: it reads the other target's tasks", perClaim[10_000], perClaim[10])
}

// claimReadsBehindAnotherTarget fills a fresh database with far ready tasks
// of target far (one in five in group shared, whose limit leaves it free) and
// 40 of the node's behind them, and returns what the server read per claim
// of one task, over 10 claims on one session.
func claimReadsBehindAnotherTarget(t *testing.T, far int) float64 {
	e := testenv.New(t, testenv.SQLServer)
	s := e.Store
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
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
		_, err := s.Enqueue(ctx, tasks[from:min(from+1000, len(tasks))])
		require.NoError(t, err)
	}
	require.NoError(t, s.SetGroupLimit(ctx, "shared", 100_000, "test"))

	// One session for the claims and the counters: PostgreSQL (under
	// Babelfish) counts per session and publishes on demand.
	pool := sqlserver.PoolOf(queue.Unwrap(s).(*sqlserver.Store))
	pool.SetMaxOpenConns(1)
	counter := newReadCounter(t, ctx, pool)
	const claims = 10
	before := counter.read(t)
	for i := range claims {
		got, err := s.Claim(ctx, queue.ClaimParams{Queue: "q", Owner: "n/q", Limit: 1, LeaseDuration: time.Hour, Targets: []string{"near", ""}})
		require.NoError(t, err)
		require.Len(t, got, 1, "claim %d behind %d", i, far)
		require.NotEqual(t, "far", got[0].Target, "claim %d behind %d", i, far)
	}
	after := counter.read(t)
	return float64(after-before) / claims
}

// readCounter reads what the server has read for the claim: under Babelfish
// the entries PostgreSQL's scans returned from the ready indexes, on SQL
// Server the logical reads of the statements of the claim batch
// (those that name readpast_tasks_ready_target) in this database.
type readCounter struct {
	db    *sql.DB
	ctx   context.Context
	query string
	flush bool
}

func newReadCounter(t *testing.T, ctx context.Context, db *sql.DB) readCounter {
	t.Helper()
	if testenv.IsBabelfish(t, os.Getenv(testenv.MSSQLDSNEnv)) {
		var dbName string
		require.NoError(t, db.QueryRowContext(ctx, "SELECT DB_NAME()").Scan(&dbName))
		schema := strings.ReplaceAll(strings.ToLower(dbName), "'", "''") + "_dbo"
		return readCounter{db: db, ctx: ctx, flush: true, query: `
SELECT COALESCE(SUM(i.idx_tup_read), 0)
FROM pg_catalog.pg_stat_user_indexes AS i
WHERE i.schemaname = '` + schema + `' AND i.relname = 'readpast_tasks'
  AND i.indexrelname LIKE 'readpast[_]tasks[_]ready%'`}
	}
	return readCounter{db: db, ctx: ctx, query: `
SELECT COALESCE(SUM(qs.total_logical_reads), 0)
FROM sys.dm_exec_query_stats AS qs
CROSS APPLY sys.dm_exec_sql_text(qs.sql_handle) AS st
WHERE st.dbid = DB_ID() AND st.text LIKE N'%readpast[_]tasks[_]ready[_]target%'`}
}

func (c readCounter) read(t *testing.T) int64 {
	t.Helper()
	if c.flush {
		// PostgreSQL publishes a session's counts at the end of a
		// transaction at most once a second unless asked.
		var n int
		require.NoError(t, c.db.QueryRowContext(c.ctx, "SELECT count(*) FROM pg_catalog.pg_stat_force_next_flush() AS f").Scan(&n))
	}
	var n int64
	require.NoError(t, c.db.QueryRowContext(c.ctx, c.query).Scan(&n), "reading the server's counters")
	return n
}
