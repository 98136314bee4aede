package migrations

import (
	"io/fs"
	"slices"
	"strings"
	"testing"

	"readpast/internal/dialect"
)

// Version N must mean the same schema on every dialect (migrations/embed.go),
// so every dialect's folder holds the same versions, each with up and down.
func TestEveryDialectHasTheSameMigrationVersions(t *testing.T) {
	t.Parallel()
	var want []string
	for _, d := range []dialect.Dialect{dialect.SQLite, dialect.Postgres, dialect.SQLServer} {
		entries, err := fs.ReadDir(FS, string(d))
		if err != nil {
			t.Fatal(err)
		}
		var ups, downs []string
		for _, e := range entries {
			name := e.Name()
			switch {
			case strings.HasSuffix(name, ".up.sql"):
				ups = append(ups, strings.TrimSuffix(name, ".up.sql"))
			case strings.HasSuffix(name, ".down.sql"):
				downs = append(downs, strings.TrimSuffix(name, ".down.sql"))
			}
		}
		if !slices.Equal(ups, downs) {
			t.Errorf("%s: up migrations %v and down migrations %v differ", d, ups, downs)
		}
		if want == nil {
			want = ups
		} else if !slices.Equal(ups, want) {
			t.Errorf("%s has migrations %v; the other dialects have %v", d, ups, want)
		}
		latest, err := Latest(d)
		if err != nil {
			t.Fatal(err)
		}
		if int(latest) != len(ups) {
			t.Errorf("%s: latest version %d but %d migrations: versions must run 1, 2, 3 …", d, latest, len(ups))
		}
	}
}
