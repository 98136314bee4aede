package sqlserver

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"readpast/migrations"
)

// TestEveryStoreBatchPinsReadCommitted checks that every batch the store
// sends (each query literal in the package, and each bound query as the Go
// code builds it) begins with readCommitted: a session left at SERIALIZABLE,
// SNAPSHOT or READ UNCOMMITTED by a transactional body would otherwise fail
// every claim with error 650 and hold range locks on every read.
func TestEveryStoreBatchPinsReadCommitted(t *testing.T) {
	for _, bq := range allBoundQueries(t) {
		if !strings.HasPrefix(bq.q.text, readCommitted) {
			t.Errorf("%s: does not begin with %q", bq.q.name, strings.TrimSpace(readCommitted))
		}
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	literals := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			if id, ok := lit.Type.(*ast.Ident); !ok || id.Name != "query" || len(lit.Elts) == 0 {
				return true
			}
			literals++
			for _, e := range lit.Elts {
				kv, ok := e.(*ast.KeyValueExpr)
				if !ok || kv.Key.(*ast.Ident).Name != "text" {
					continue
				}
				if leftmost(kv.Value) != "readCommitted" {
					t.Errorf("%s: a query's text does not begin with readCommitted", fset.Position(kv.Pos()))
				}
			}
			return true
		})
	}
	if literals < 30 {
		t.Fatalf("found only %d query literals: has the package's layout changed?", literals)
	}
}

// leftmost names the first operand of a chain of + (an identifier), or "".
func leftmost(e ast.Expr) string {
	for {
		switch v := e.(type) {
		case *ast.BinaryExpr:
			e = v.X
		case *ast.Ident:
			return v.Name
		default:
			return ""
		}
	}
}

// TestGlobalTempTableBodiesEndTheirSession: the session of a body that may
// create a ##global temporary table is ended, not pooled (over TDS:
// TestGlobalTempTableEndsWithItsSession, skipped on Babelfish, which has none).
func TestGlobalTempTableBodiesEndTheirSession(t *testing.T) {
	if !createsGlobalTemp("CREATE TABLE ##g (id int);") || !createsGlobalTemp("SELECT * INTO ##copy FROM t") {
		t.Error("a body that creates a ##global table must end its session")
	}
	if createsGlobalTemp("CREATE TABLE #t (id int);") {
		t.Error("a #local table is dropped by the reset: the session may be pooled")
	}
}

// TestRestoreTurnsOffWhatBreaksTheStore: after a body, the session is set
// back before the store uses it; each option here, left on by a body, turned
// a successful body into a store failure (over TDS:
// TestBodyLeavesNoIdentityInsertOn).
func TestRestoreTurnsOffWhatBreaksTheStore(t *testing.T) {
	restore := restoreOptions("db")
	for _, want := range []string{"SET STATISTICS XML OFF;", "SET STATISTICS PROFILE OFF;", "SET NOEXEC OFF;", "SET TRANSACTION ISOLATION LEVEL READ COMMITTED;", "SET ROWCOUNT 0;"} {
		if !strings.Contains(restore, want) {
			t.Errorf("restoreOptions lacks %s", want)
		}
	}
	// Every store table with an identity column, as the migrations create them.
	tableRE := regexp.MustCompile(`(?is)CREATE TABLE (dbo\.\w+)\s*\((.*?)\n\);`)
	found := 0
	err := fs.WalkDir(migrations.FS, "sqlserver", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".up.sql") {
			return err
		}
		b, err := fs.ReadFile(migrations.FS, path)
		if err != nil {
			return err
		}
		for _, m := range tableRE.FindAllStringSubmatch(string(b), -1) {
			if strings.Contains(strings.ToUpper(m[2]), "IDENTITY(") {
				found++
				if !strings.Contains(restore, "SET IDENTITY_INSERT "+m[1]+" OFF;") {
					t.Errorf("restoreOptions does not turn IDENTITY_INSERT off on %s (%s)", m[1], path)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found == 0 {
		t.Fatal("found no table with an identity column in the migrations: has their layout changed?")
	}
	if !strings.Contains(restoreBatch("db", "m", "readpast task 1 lease 2"), "ORIGINAL_LOGIN(), SUSER_SNAME()") {
		t.Error("restoreBatch must read who the session runs as, to refuse a body that left EXECUTE AS in force")
	}
}

// TestEveryWriteRunsADeadlockVictimAgain: every call of s.write or s.exec is
// inside a function given to retryDeadlock or retryConflicts, so a deadlock
// victim (1205), whose transaction SQL Server rolled back whole, runs again
// instead of failing its caller. The heartbeat and SetSession did not.
func TestEveryWriteRunsADeadlockVictimAgain(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	writes := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		var stack []ast.Node
		ast.Inspect(f, func(n ast.Node) bool {
			if n == nil {
				stack = stack[:len(stack)-1]
				return true
			}
			stack = append(stack, n)
			call, ok := n.(*ast.CallExpr)
			if !ok || !isStoreWrite(call) {
				return true
			}
			if fn := enclosingFunc(stack); fn == "exec" {
				return true // write.go: exec is write with one batch
			}
			writes++
			if !insideRetry(stack) {
				t.Errorf("%s: a store write outside retryDeadlock or retryConflicts", fset.Position(call.Pos()))
			}
			return true
		})
	}
	if writes < 20 {
		t.Fatalf("found only %d store writes: has the package's layout changed?", writes)
	}
}

// isStoreWrite reports whether call is s.write(...) or s.exec(...).
func isStoreWrite(call *ast.CallExpr) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	recv, ok := sel.X.(*ast.Ident)
	return ok && recv.Name == "s" && (sel.Sel.Name == "write" || sel.Sel.Name == "exec")
}

// enclosingFunc names the function declaration the innermost node is in.
func enclosingFunc(stack []ast.Node) string {
	for i := len(stack) - 1; i >= 0; i-- {
		if d, ok := stack[i].(*ast.FuncDecl); ok {
			return d.Name.Name
		}
	}
	return ""
}

// insideRetry reports whether a call of retryDeadlock or retryConflicts
// encloses the innermost node.
func insideRetry(stack []ast.Node) bool {
	for i := len(stack) - 2; i >= 0; i-- {
		call, ok := stack[i].(*ast.CallExpr)
		if !ok {
			continue
		}
		if id, ok := call.Fun.(*ast.Ident); ok && (id.Name == "retryDeadlock" || id.Name == "retryConflicts") {
			return true
		}
	}
	return false
}

// TestRollupWritesTakeNoRangeLockOfAnotherQueue: a finish creates its
// throughput rows before its transaction (throughputBuckets), so its
// (UPDLOCK, SERIALIZABLE) upsert finds them and range-locks no other queue's
// key; and the purge deletes in bounded statements that cannot escalate to a
// table lock.
func TestRollupWritesTakeNoRangeLockOfAnotherQueue(t *testing.T) {
	begin := strings.Index(finishBatch.text, "BEGIN TRAN;")
	if i := strings.Index(finishBatch.text, throughputBuckets); i < 0 || i > begin {
		t.Error("the finish batch must create its throughput rows before BEGIN TRAN")
	}
	code := strings.ToUpper(stripSQL(purgeRollupsBatch.text))
	deletes := regexp.MustCompile(`DELETE\s+(TOP\s*\(\d+\)\s+)?FROM`).FindAllStringSubmatch(code, -1)
	if len(deletes) == 0 {
		t.Fatal("the rollup purge deletes nothing")
	}
	for _, d := range deletes {
		if d[1] == "" {
			t.Errorf("the rollup purge has an unbounded DELETE: %q", d[0])
		}
	}
}

// TestRetryCountsTheStagesItReopened: a retry that reopens a chain's
// cancelled stages subtracts from the finished counts the rows its UPDATE
// changed (OUTPUT), not the rows it listed before without a lock: a purge in
// between took a listed task out of the counts already.
func TestRetryCountsTheStagesItReopened(t *testing.T) {
	code := stripSQL(retryBatch.text)
	if !regexp.MustCompile(`(?s)OUTPUT inserted\.id, inserted\.queue INTO @reopened`).MatchString(code) {
		t.Error("the reopening UPDATE must OUTPUT the rows it changed into @reopened")
	}
	if !regexp.MustCompile(`(?s)INSERT INTO @counted \(queue, state, n\)\s+SELECT r\.queue, '', -COUNT_BIG\(\*\)\s+FROM @reopened`).MatchString(code) {
		t.Error("the counts of reopened stages must be taken from @reopened")
	}
}
