package postgres

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestAuditReadsThePrimaryKey checks SPEC §9 for the audit page on
// PostgreSQL: with a long audit log, a page (the first, and one deep in the
// log) is a backward range scan of the primary key, in the plan for the
// values (custom) and the one a prepared statement may switch to (generic),
// never a scan of the table and a sort.
func TestAuditReadsThePrimaryKey(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := migratedStore(t, ctx)
	if _, err := s.pool.Exec(ctx, `INSERT INTO readpast_audit (actor, action, target, detail)
		SELECT 'operator:ann', 'set_group_limit', 'group g' || g, '2' FROM generate_series(1, 50000) g;
		ANALYZE readpast_audit`); err != nil {
		t.Fatal(err)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "PREPARE audit_page AS "+auditSQL); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		if _, err := conn.Exec(ctx, "SET plan_cache_mode = "+mode); err != nil {
			t.Fatal(err)
		}
		for _, before := range []string{"9223372036854775807", "25000"} {
			text := strings.Join(plan(t, ctx, conn, "audit", "EXPLAIN EXECUTE audit_page("+before+", 100)"), "\n")
			if !strings.Contains(text, "Index Scan Backward using readpast_audit_pkey") || strings.Contains(text, "Seq Scan") || strings.Contains(text, "Sort") {
				t.Fatalf("an audit page below %s (%s) does not read the primary key backward:\n%s", before, mode, text)
			}
		}
	}
	if _, err := conn.Exec(ctx, "RESET plan_cache_mode; DEALLOCATE ALL"); err != nil {
		t.Fatal(err)
	}
}
