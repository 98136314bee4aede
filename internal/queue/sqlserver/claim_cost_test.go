package sqlserver_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/queue/sqlserver"
	"readpast/internal/testenv"
)

// TestClaimCostIsFlatBehindFullGroups: a claim must not read the groups that
// cannot admit a task (issue 26, item 2). Its plan used to walk every group
// with a ready task, three statements each, so behind 10,000 full
// per-customer groups one claim read 10,000 group rows and as many index
// entries. Now it is driven by the groups with a free slot
// (readpast_groups_free), and a full group is not in that index. The test
// counts what the server itself counts: the index seeks and scans and the
// table scans begun on readpast_tasks and readpast_groups per claim, behind
// 10 full groups and behind 10,000, both taking the same ungrouped tasks.
// Scans, not rows: under Babelfish, PostgreSQL leaves an updated row's old
// index entries until vacuum and counts them as read (a full group's entry
// in the free-groups index, dead since its claim), where SQL Server takes the
// row out of a filtered index in the update.
func TestClaimCostIsFlatBehindFullGroups(t *testing.T) {
	if os.Getenv(testenv.MSSQLDSNEnv) == "" {
		t.Skip(testenv.MSSQLDSNEnv + " not set: no SQL Server to run on")
	}
	perClaim := map[int]float64{}
	for _, groups := range []int{10, 10000} {
		perClaim[groups] = claimScansBehindFullGroups(t, groups)
	}
	t.Logf("index and table scans per claim: %.0f behind 10 full groups, %.0f behind 10,000", perClaim[10], perClaim[10000])
	require.LessOrEqual(t, perClaim[10000], 2*perClaim[10]+20,
		"a claim behind 10,000 full groups began %.0f index or table scans, behind 10 it began %.0f: it reads the full groups", perClaim[10000], perClaim[10])
}

// claimScansBehindFullGroups fills `groups` groups of a fresh database (one
// running task each at the default limit of 1, and one more waiting), puts 40
// ungrouped tasks behind them, and returns the scans the server began on the
// task and group tables per claim of one task.
func claimScansBehindFullGroups(t *testing.T, groups int) float64 {
	e := testenv.New(t, testenv.SQLServer)
	s := e.Store
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute) // filling 10,000 groups over TDS on Babelfish takes minutes
	defer cancel()
	const q = "cost"
	// Fill the groups 200 at a time (a claim that plans thousands of open
	// groups at once is slow on Babelfish): each round enqueues one task to
	// each of 200 new groups and claims them, which fills them.
	const chunk = 200
	for from := 0; from < groups; from += chunk {
		var batch []queue.NewTask
		for g := from; g < min(from+chunk, groups); g++ {
			batch = append(batch, queue.NewTask{Body: "SELECT 1", Queue: q, Group: fmt.Sprintf("customer-%05d", g)})
		}
		_, err := s.Enqueue(ctx, batch)
		require.NoError(t, err)
		got, err := s.Claim(ctx, queue.ClaimParams{Queue: q, Owner: "filler", Limit: chunk, LeaseDuration: time.Hour})
		require.NoError(t, err)
		require.Len(t, got, len(batch), "filling groups %d to %d", from, from+len(batch))
	}
	// And a task waiting in each full group.
	for from := 0; from < groups; from += 1000 {
		var batch []queue.NewTask
		for g := from; g < min(from+1000, groups); g++ {
			batch = append(batch, queue.NewTask{Body: "SELECT 1", Queue: q, Group: fmt.Sprintf("customer-%05d", g)})
		}
		_, err := s.Enqueue(ctx, batch)
		require.NoError(t, err)
	}
	var free []queue.NewTask
	for range 40 {
		free = append(free, queue.NewTask{Body: "SELECT 1", Queue: q})
	}
	_, err := s.Enqueue(ctx, free)
	require.NoError(t, err)

	// One session for the claims and the counters: PostgreSQL (under
	// Babelfish) counts per session and publishes on demand.
	pool := sqlserver.PoolOf(queue.Unwrap(s).(*sqlserver.Store))
	pool.SetMaxOpenConns(1)
	counter := newScanCounter(t, ctx, pool)
	const claims = 10
	before := counter.read(t)
	for range claims {
		got, err := s.Claim(ctx, queue.ClaimParams{Queue: q, Owner: "measured", Limit: 1, LeaseDuration: time.Hour})
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.Empty(t, got[0].Group, "a full group admitted a task")
	}
	after := counter.read(t)
	return float64(after-before) / claims
}

// scanCounter reads how many scans the server has begun on readpast_tasks
// and readpast_groups in the database, by the server's own statistics: SQL
// Server's sys.dm_db_index_operational_stats (range scans and singleton
// lookups), or, on Babelfish, PostgreSQL's pg_stat_user_indexes and
// pg_stat_user_tables (index scans and table scans).
type scanCounter struct {
	db    *sql.DB
	ctx   context.Context
	query string
}

func newScanCounter(t *testing.T, ctx context.Context, db *sql.DB) scanCounter {
	t.Helper()
	if testenv.IsBabelfish(t, os.Getenv(testenv.MSSQLDSNEnv)) {
		var dbName string
		require.NoError(t, db.QueryRowContext(ctx, "SELECT DB_NAME()").Scan(&dbName))
		schema := strings.ReplaceAll(strings.ToLower(dbName), "'", "''") + "_dbo"
		return scanCounter{db: db, ctx: ctx, query: `
SELECT (SELECT COALESCE(SUM(i.idx_scan), 0)
        FROM pg_catalog.pg_stat_user_indexes AS i
        WHERE i.schemaname = '` + schema + `' AND i.relname IN ('readpast_tasks', 'readpast_groups'))
     + (SELECT COALESCE(SUM(r.seq_scan), 0)
        FROM pg_catalog.pg_stat_user_tables AS r
        WHERE r.schemaname = '` + schema + `' AND r.relname IN ('readpast_tasks', 'readpast_groups'))`}
	}
	return scanCounter{db: db, ctx: ctx, query: `
SELECT COALESCE(SUM(s.range_scan_count + s.singleton_lookup_count), 0)
FROM sys.dm_db_index_operational_stats(DB_ID(), NULL, NULL, NULL) AS s
WHERE s.object_id IN (OBJECT_ID(N'dbo.readpast_tasks'), OBJECT_ID(N'dbo.readpast_groups'))`}
}

func (c scanCounter) read(t *testing.T) int64 {
	t.Helper()
	if strings.Contains(c.query, "pg_catalog") {
		// PostgreSQL publishes a session's counts at the end of a
		// transaction at most once a second unless asked.
		var n int
		require.NoError(t, c.db.QueryRowContext(c.ctx, "SELECT count(*) FROM pg_catalog.pg_stat_force_next_flush() AS f").Scan(&n))
	}
	var n int64
	require.NoError(t, c.db.QueryRowContext(c.ctx, c.query).Scan(&n), "reading the server's scan counters")
	return n
}
