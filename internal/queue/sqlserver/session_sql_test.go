package sqlserver

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
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
