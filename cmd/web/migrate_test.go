package main

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"readpast/internal/dialect"
	"readpast/migrations"
)

// A schema version means the same schema on every dialect (migrations/embed.go),
// so `migrate status` can say "version N of N" whatever the store: every
// dialect embeds the same numbered migrations, each with its up and down.
func TestMigrationVersionsAgreeAcrossDialects(t *testing.T) {
	t.Parallel()
	files := map[string][]string{}
	for _, d := range []string{"sqlite", "postgres", "sqlserver"} {
		entries, err := fs.ReadDir(migrations.FS, d)
		require.NoError(t, err)
		for _, e := range entries {
			files[d] = append(files[d], e.Name())
		}
		sort.Strings(files[d])
		require.NotEmpty(t, files[d], d)
	}
	require.Equal(t, files["sqlite"], files["postgres"], "PostgreSQL's migrations are numbered and named as SQLite's")
	require.Equal(t, files["sqlite"], files["sqlserver"], "SQL Server's migrations are numbered and named as SQLite's")
	for _, f := range files["sqlite"] {
		var v int
		var rest string
		_, err := fmt.Sscanf(f, "%06d_%s", &v, &rest)
		require.NoError(t, err, "%s is named NNNNNN_name.up.sql or .down.sql", f)
		other := f[:len(f)-len(".up.sql")] + ".down.sql"
		if filepath.Ext(f[:len(f)-4]) == ".down" {
			other = f[:len(f)-len(".down.sql")] + ".up.sql"
		}
		require.Contains(t, files["sqlite"], other, "%s has its pair", f)
	}

	latest, err := migrations.Latest(dialect.SQLite)
	require.NoError(t, err)
	for _, d := range []dialect.Dialect{dialect.Postgres, dialect.SQLServer} {
		l, err := migrations.Latest(d)
		require.NoError(t, err)
		require.Equal(t, latest, l, "%s knows up to the same version", d)
	}
	var out bytes.Buffer
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "m.db")
	require.Equal(t, 0, run(context.Background(), []string{"migrate", "up", "--dsn", dsn}, envOf(nil), &out, &out), out.String())
	require.Contains(t, out.String(), fmt.Sprintf("schema version %d, this binary knows up to %d (up to date)", latest, latest))
}
