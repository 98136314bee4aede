package queue

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// storeDirs are the dialects' store packages.
var storeDirs = []string{"postgres", "sqlite", "sqlserver"}

// decidedAbove are the packages that decide what a store writes (issue 24):
// a store that imported one would be taking decisions back from them, and a
// new dialect would have to repeat them.
var decidedAbove = []string{"readpast/internal/schedule", "readpast/internal/ops", "readpast/internal/web"}

// TestStoresOnlyPersist fails when a store package, its tests included,
// imports a package that decides what stores write: the stores persist the
// values they are given and the rules stay in one place.
func TestStoresOnlyPersist(t *testing.T) {
	for _, dir := range storeDirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("listing the Go files of store package %s: %v (found %d)", dir, err, len(files))
		}
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			parsed, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
			if err != nil {
				t.Fatalf("reading the imports of %s: %v", f, err)
			}
			for _, imp := range parsed.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				for _, above := range decidedAbove {
					if path == above || strings.HasPrefix(path, above+"/") {
						t.Errorf("%s imports %s: a store writes the values it is given and decides nothing; move the rule to that package's callers", f, path)
					}
				}
			}
		}
	}
}
