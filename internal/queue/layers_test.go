package queue

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// storeDirs are the dialects' store packages.
var storeDirs = []string{"postgres", "sqlite", "sqlserver"}

// decidedAbove are the packages that decide what stores write (issue 24): a
// store that imported one would be taking decisions back from them, and a
// new dialect would have to repeat them.
var decidedAbove = []string{"readpast/internal/schedule", "readpast/internal/jobs", "readpast/internal/ops", "readpast/internal/web"}

// sharedChecks are the checks Checked makes before a dialect's store is
// called. A store that made one again would be repeating a rule that lives
// here; the dialects keep only what their own types bound (SQL Server's
// date range and column widths).
var sharedChecks = map[string]bool{
	"CheckClaim": true, "CheckHold": true, "CheckList": true, "CheckLogQuery": true, "CheckPurge": true,
	"CheckThroughput": true, "CheckDueLimit": true, "CheckQueueUpdate": true, "CheckGroupLimit": true,
	"CheckFinishOutcome": true, "NormalizeAll": true, "CheckRunQuery": true, "CheckRetryPolicy": true,
}

// TestStoresOnlyPersist fails when a store package imports a package that
// decides what stores write, or (outside its tests) makes one of the checks
// Checked makes: the stores persist the values they are given and the rules
// stay in one place.
func TestStoresOnlyPersist(t *testing.T) {
	for _, dir := range storeDirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("listing the Go files of store package %s: %v (found %d)", dir, err, len(files))
		}
		for _, f := range files {
			parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatalf("reading %s: %v", f, err)
			}
			for _, imp := range parsed.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				for _, above := range decidedAbove {
					if path == above || strings.HasPrefix(path, above+"/") {
						t.Errorf("%s imports %s: a store writes the values it is given and decides nothing; move the rule to that package's callers", f, path)
					}
				}
			}
			if strings.HasSuffix(f, "_test.go") {
				continue // tests may check what the dialect is given as Checked would
			}
			ast.Inspect(parsed, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "queue" && sharedChecks[sel.Sel.Name] {
					t.Errorf("%s calls queue.%s: queue.Checked makes that check before the store is called; the store should take the value as given", f, sel.Sel.Name)
				}
				return true
			})
		}
	}
}
