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

// Every SQL Server migration that changes something runs all or nothing (Up's
// comment): XACT_ABORT ON, one transaction, committed at the end. Version 13
// shipped without it: a failure of its DROP would have kept the index its
// CREATE had made, so the migration, run again, would have failed on that
// index for ever.
func TestEverySQLServerMigrationIsOneTransaction(t *testing.T) {
	t.Parallel()
	entries, err := fs.ReadDir(FS, string(dialect.SQLServer))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := fs.ReadFile(FS, string(dialect.SQLServer)+"/"+e.Name())
		if err != nil {
			t.Fatal(err)
		}
		var statements []string
		for _, line := range strings.Split(string(b), "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "--") {
				statements = append(statements, line)
			}
		}
		if slices.Equal(statements, []string{"SELECT 1;"}) {
			continue // a version with nothing to change on this dialect
		}
		if len(statements) < 3 || statements[0] != "SET XACT_ABORT ON;" || statements[1] != "BEGIN TRANSACTION;" ||
			statements[len(statements)-1] != "COMMIT TRANSACTION;" {
			t.Errorf("%s: a SQL Server migration must start with SET XACT_ABORT ON; BEGIN TRANSACTION; and end with COMMIT TRANSACTION;", e.Name())
		}
	}
}
