package target

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A body that could change its SQLite connection, or read what another body
// left on it, is recognized by its words, in any case and wherever they are.
func TestSQLiteMayChangeSession(t *testing.T) {
	for body, want := range map[string]bool{
		"SELECT 1": false,
		"INSERT INTO t VALUES (1); UPDATE t SET n = n + 1": false,
		"BEGIN; INSERT INTO t VALUES (1); COMMIT":          false,
		"PRAGMA query_only = 1":                            true,
		"pragma foreign_keys=off":                          true,
		"SELECT * FROM pragma_table_info('t')":             true,
		"CREATE TEMP TABLE x (n int)":                      true,
		"CREATE TEMPORARY VIEW v AS SELECT 1":              true,
		`CREATE TABLE "Temp".x (n int)`:                    true,
		"CREATE TABLE [temp].x (n int)":                    true,
		"ATTACH 'other.db' AS o":                           true,
		"DETACH o":                                         true,
		"SELECT last_insert_rowid()":                       true,
		"SELECT changes(), total_changes()":                true,
		"SELECT load_extension('x')":                       true,
		"-- PRAGMA in a comment\nSELECT 1":                 true,
	} {
		require.Equal(t, want, sqliteMayChangeSession(body), "%q", body)
	}
}

// Bodies that leave their connection as they found it share pooled
// connections; a body that changes its connection, or reads its counters,
// runs on one of its own, closed after it, so neither what it does nor what
// the pooled bodies did reaches anyone else.
func TestSQLiteSessionsStayApart(t *testing.T) {
	ctx := context.Background()
	tgt, err := openSQLite(ctx, filepath.Join(t.TempDir(), "target.db"), 0)
	require.NoError(t, err)
	defer tgt.Close()
	runOK := func(body string) {
		t.Helper()
		_, err := tgt.Run(ctx, body, nil)
		require.NoError(t, err, "running %q", body)
	}
	count := func(query string) (n int) {
		t.Helper()
		require.NoError(t, tgt.db.QueryRowContext(ctx, query).Scan(&n))
		return n
	}
	runOK("CREATE TABLE t (n INTEGER PRIMARY KEY); CREATE TABLE seen (last_id int, changed int)")
	for range 20 {
		runOK("INSERT INTO t (n) VALUES (NULL)")
	}
	require.Equal(t, 1, tgt.db.Stats().OpenConnections, "bodies run one after another share one pooled connection")

	// The counters the inserts moved on the pooled connection are not seen.
	runOK("INSERT INTO seen SELECT last_insert_rowid(), changes()")
	require.Equal(t, 1, count("SELECT count(*) FROM seen WHERE last_id = 0 AND changed = 0"))
	require.Equal(t, 0, tgt.fresh.Stats().OpenConnections, "a body's own connection is closed after it")

	// A setting and a temporary table end with the body that made them.
	runOK("CREATE TEMP TABLE tmp (n int); PRAGMA query_only = 1")
	for range 3 {
		runOK("INSERT INTO t (n) VALUES (NULL)")
		runOK("CREATE TEMP TABLE tmp (n int)")
	}
	require.Equal(t, 23, count("SELECT count(*) FROM t"))

	// A pooled connection whose body failed or was stopped is closed.
	_, err = tgt.Run(ctx, "INSERT INTO nowhere VALUES (1)", nil)
	require.Error(t, err)
	stopped, cancel := context.WithCancel(ctx)
	cancel()
	_, err = tgt.Run(stopped, "SELECT 1", nil)
	require.Error(t, err)
	require.LessOrEqual(t, tgt.db.Stats().OpenConnections, 1)
	runOK("SELECT 1")
}
