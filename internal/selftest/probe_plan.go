package selftest

import (
	"context"
	"database/sql"
	"encoding/xml"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"readpast/internal/dialect"
	"readpast/internal/queue"
	"readpast/internal/queue/sqlserver"
)

// probeClaimPlan checks how the server runs the production claim behind a
// backlog of history, delayed tasks and a full group: through the claim's
// indexes, never scanning the tasks table, never sorting what it reads from
// it (SPEC §4.5, §9).
func probeClaimPlan(ctx context.Context, e *env) []Check {
	return []Check{timed(Check{Name: "claim plan", Guarantee: "the claim seeks its indexes: no scan or sort of the tasks behind a backlog (§4.5, §9)"}, func(c *Check) {
		const q = "st-plan"
		if err := seedBacklog(ctx, e, q); err != nil {
			c.failed("building the backlog", err)
			return
		}
		switch e.dialect {
		case dialect.SQLServer:
			sqlServerPlan(ctx, e, q, c)
		case dialect.Postgres:
			postgresPlan(ctx, e, q, c)
		default:
			c.Status, c.Evidence = Skip, "SQLite runs one writer at a time on one file: its claim plans are fixed by the schema and checked by the test suite"
		}
	})}
}

// seedBacklog enqueues what a claim must not read past: 2,000 tasks delayed
// an hour at a more urgent priority, 2,000 tasks of one full mutex group, 20
// tasks that can run, and 2,000 finished tasks of history.
func seedBacklog(ctx context.Context, e *env, q string) error {
	if err := enqueueMany(ctx, e.a, 2000, func(int) queue.NewTask {
		return queue.NewTask{Queue: q, Body: "SELECT 1", Priority: ptr(0), Delay: time.Hour}
	}); err != nil {
		return err
	}
	if err := enqueueMany(ctx, e.a, 2001, func(int) queue.NewTask {
		return queue.NewTask{Queue: q, Body: "SELECT 1", Priority: ptr(1), Group: q + "-busy"}
	}); err != nil {
		return err
	}
	if got, err := e.a.Claim(ctx, queue.ClaimParams{Queue: q, Owner: "selftest/busy", Limit: 1, LeaseDuration: time.Hour}); err != nil || len(got) != 1 {
		return fmt.Errorf("filling the busy group: %d tasks (%v)", len(got), err)
	}
	if err := enqueueMany(ctx, e.a, 2000, func(int) queue.NewTask { return queue.NewTask{Queue: q + "-done", Body: "SELECT 1"} }); err != nil {
		return err
	}
	for {
		got, err := e.a.Claim(ctx, queue.ClaimParams{Queue: q + "-done", Owner: "selftest/h", Limit: 500, LeaseDuration: time.Minute})
		if err != nil {
			return err
		}
		if len(got) == 0 {
			break
		}
		if err := finishAll(ctx, e.a, got, queue.OutcomeSucceeded); err != nil {
			return err
		}
	}
	return enqueueMany(ctx, e.a, 20, func(int) queue.NewTask { return queue.NewTask{Queue: q, Body: "SELECT 1", Priority: ptr(5)} })
}

// sqlServerPlan asks SQL Server for the estimated plan of the production
// claim batch (SET SHOWPLAN_XML ON: the batch is compiled, not run) and reads
// every operator that touches readpast_tasks.
func sqlServerPlan(ctx context.Context, e *env, q string, c *Check) {
	text, args, err := sqlserver.ClaimBatch(queue.ClaimParams{Queue: q, Owner: "selftest/plan", Limit: 10, LeaseDuration: time.Minute})
	if err != nil {
		c.failed("preparing the claim", err)
		return
	}
	conn, err := e.sc.db.Conn(ctx)
	if err != nil {
		c.failed("connecting", err)
		return
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SET SHOWPLAN_XML ON;"); err != nil {
		c.Status, c.Evidence = Skip, "the login may not see plans (SHOWPLAN permission on the database): "+err.Error()
		return
	}
	plans, err := readPlans(ctx, conn, text, args)
	_, offErr := conn.ExecContext(context.WithoutCancel(ctx), "SET SHOWPLAN_XML OFF;")
	switch {
	case err != nil:
		c.failed("reading the plan", err)
		return
	case offErr != nil:
		c.failed("turning the plan off again", offErr)
		return
	case len(plans) == 0:
		c.Status, c.Evidence = Skip, "the server ran the batch instead of returning its plan (SET SHOWPLAN_XML is not supported there)"
		return
	}
	var ops []planOp
	for _, p := range plans {
		more, err := tasksOperators(p)
		if err != nil {
			c.failed("parsing the plan", err)
			return
		}
		ops = append(ops, more...)
	}
	var seeks, bad []string
	for _, op := range ops {
		switch {
		case op.sortAbove:
			bad = append(bad, fmt.Sprintf("a Sort above %s %s", op.physical, op.index))
		case strings.Contains(op.physical, "Scan"):
			bad = append(bad, fmt.Sprintf("%s of %s", op.physical, op.index))
		default:
			seeks = append(seeks, op.index)
		}
	}
	if len(bad) > 0 {
		c.Status, c.Evidence = Fail, "the claim's plan reads readpast_tasks by "+strings.Join(bad, "; ")
		return
	}
	c.passed("behind 2,000 delayed, 2,000 in a full group and 2,000 finished: %d index seeks of readpast_tasks (%s), no scan, no sort", len(seeks), countNames(seeks))
}

// readPlans sends the batch with SHOWPLAN_XML on and collects the XML
// documents the server answers with, one per statement.
func readPlans(ctx context.Context, conn *sql.Conn, text string, args []any) ([]string, error) {
	rows, err := conn.QueryContext(ctx, text, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for {
		for rows.Next() {
			var v any
			if err := rows.Scan(&v); err != nil {
				return out, nil // not a plan: the server ran the batch
			}
			if s, ok := v.(string); ok && strings.Contains(s, "ShowPlanXML") {
				out = append(out, s)
			}
		}
		if !rows.NextResultSet() {
			break
		}
	}
	return out, rows.Err()
}

// planOp is one operator of a plan that reads readpast_tasks.
type planOp struct {
	physical, index string
	sortAbove       bool
}

// node is a generic XML element of a showplan.
type node struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Nodes   []node     `xml:",any"`
}

func (n node) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// tasksOperators walks a showplan and returns its RelOps whose own Object is
// readpast_tasks (not a table variable), each with whether a Sort operator is
// above it.
func tasksOperators(doc string) ([]planOp, error) {
	var root node
	if err := xml.Unmarshal([]byte(doc), &root); err != nil {
		return nil, err
	}
	var out []planOp
	var walk func(n node, sortAbove bool)
	walk = func(n node, sortAbove bool) {
		if n.XMLName.Local == "RelOp" {
			physical := n.attr("PhysicalOp")
			if obj, ok := ownObject(n); ok && strings.EqualFold(obj.attr("Table"), "[readpast_tasks]") {
				out = append(out, planOp{physical: physical, index: obj.attr("Index"), sortAbove: sortAbove})
			}
			sortAbove = sortAbove || strings.Contains(physical, "Sort")
		}
		for _, child := range n.Nodes {
			walk(child, sortAbove)
		}
	}
	walk(root, false)
	return out, nil
}

// ownObject finds the Object a RelOp reads itself (in its operator element,
// not in a child RelOp).
func ownObject(relop node) (node, bool) {
	var find func(n node) (node, bool)
	find = func(n node) (node, bool) {
		for _, c := range n.Nodes {
			if c.XMLName.Local == "RelOp" {
				continue
			}
			if c.XMLName.Local == "Object" {
				return c, true
			}
			if o, ok := find(c); ok {
				return o, true
			}
		}
		return node{}, false
	}
	return find(relop)
}

func countNames(names []string) string {
	n := map[string]int{}
	for _, s := range names {
		n[s]++
	}
	var out []string
	for s, k := range n {
		out = append(out, fmt.Sprintf("%s ×%d", s, k))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// postgresPlan runs twenty production claims behind the backlog and reads
// the server's own counters of how readpast_tasks was read: PostgreSQL keeps
// the claim in a PL/pgSQL function, whose plans EXPLAIN cannot show from
// outside, but its statistics count every index scan and sequential scan.
func postgresPlan(ctx context.Context, e *env, q string, c *Check) {
	if _, err := e.sc.db.ExecContext(ctx, "ANALYZE readpast_tasks"); err != nil {
		c.failed("analyzing the scratch tables", err)
		return
	}
	// Counters reach the statistics views when a backend goes idle, up to
	// some seconds late: wait until the earlier probes' have all arrived.
	before, err := settledScans(ctx, e.sc.db, func(scans) bool { return true })
	if err != nil {
		c.failed("reading the table statistics", err)
		return
	}
	for i := 0; i < 20; i++ {
		got, err := e.b.Claim(ctx, queue.ClaimParams{Queue: q, Owner: "selftest/plan", Limit: 1, LeaseDuration: time.Minute})
		if err != nil || len(got) != 1 || got[0].Group != "" || got[0].Priority != 5 {
			c.failed("claiming behind the backlog", fmt.Errorf("%d tasks (%v), want one of the 20 free ones", len(got), err))
			return
		}
		if err := finishAll(ctx, e.b, got, queue.OutcomeSucceeded); err != nil {
			c.failed("finishing", err)
			return
		}
	}
	after, err := settledScans(ctx, e.sc.db, func(s scans) bool { return s.idx-before.idx >= 20 })
	if err != nil {
		c.failed("reading the table statistics", err)
		return
	}
	switch {
	case after.seq > before.seq:
		c.Status, c.Evidence = Fail, fmt.Sprintf("20 claims behind the backlog scanned readpast_tasks sequentially %d times", after.seq-before.seq)
	case after.idx-before.idx < 20:
		c.Status, c.Evidence = Fail, fmt.Sprintf("20 claims read readpast_tasks by index only %d times (the statistics may be off: track_counts)", after.idx-before.idx)
	default:
		c.passed("20 claims behind 2,000 delayed, 2,000 in a full group and 2,000 finished: %d index scans of readpast_tasks, no sequential scan", after.idx-before.idx)
	}
}

type scans struct{ seq, idx int64 }

// statsIdleFlush is how late PostgreSQL may report a backend's counters: an
// idle backend flushes them within 10 s (PGSTAT_IDLE_INTERVAL).
const statsIdleFlush = 11 * time.Second

// settledScans reads the scan counters of readpast_tasks until they have
// not moved for statsIdleFlush and enough says they are complete, or a
// minute passes.
func settledScans(ctx context.Context, db *sql.DB, enough func(scans) bool) (scans, error) {
	last, err := tableScans(ctx, db)
	if err != nil {
		return last, err
	}
	still := time.Now()
	for end := time.Now().Add(time.Minute); time.Now().Before(end); {
		time.Sleep(500 * time.Millisecond)
		now, err := tableScans(ctx, db)
		if err != nil {
			return now, err
		}
		if now != last {
			last, still = now, time.Now()
			continue
		}
		if time.Since(still) >= statsIdleFlush && enough(now) {
			return now, nil
		}
	}
	return last, nil
}

func tableScans(ctx context.Context, db *sql.DB) (scans, error) {
	var s scans
	_, _ = db.ExecContext(ctx, "SELECT pg_stat_clear_snapshot()")
	err := db.QueryRowContext(ctx, `SELECT coalesce(seq_scan, 0), coalesce(idx_scan, 0) FROM pg_stat_user_tables
		WHERE relid = 'readpast_tasks'::regclass`).Scan(&s.seq, &s.idx)
	if errors.Is(err, sql.ErrNoRows) {
		return s, errors.New("readpast_tasks has no statistics row")
	}
	return s, err
}
