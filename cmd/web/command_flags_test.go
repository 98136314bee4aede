package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"readpast/internal/dialect"
	"readpast/migrations"
)

// Each command's --help lists its own flags: migrate connects to the store
// and nothing more, so it shows --dsn and --log-level, not serve's --listen,
// --workers or tokens; serve's help still shows them all. A flag a command
// does not take is refused, not silently ignored.
func TestEachCommandShowsItsOwnFlags(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run(context.Background(), []string{"migrate", "--help"}, envOf(nil), &out, &errOut))
	help := errOut.String()
	require.Contains(t, help, "-dsn")
	require.Contains(t, help, "-log-level")
	for _, serveOnly := range []string{"-listen", "-workers", "-lease", "-operator-token", "-target-dsn", "-grace"} {
		require.NotContains(t, help, serveOnly, "migrate --help lists serve's flag %s", serveOnly)
	}
	errOut.Reset()
	require.Equal(t, 0, run(context.Background(), []string{"serve", "--help"}, envOf(nil), &out, &errOut))
	for _, f := range []string{"-dsn", "-listen", "-workers", "-operator-token"} {
		require.Contains(t, errOut.String(), f, "serve --help lists %s", f)
	}
	errOut.Reset()
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "m.db")
	require.Equal(t, 2, run(context.Background(), []string{"migrate", "--dsn", dsn, "--workers", "3"}, envOf(nil), &out, &errOut))
	require.Contains(t, errOut.String(), "-workers")
}

// A fresh store migrated when serve starts says so: one log line per
// migration applied, with its version and name; a store already current logs
// none. `readpast migrate up` prints the same.
func TestServeLogsEachMigrationApplied(t *testing.T) {
	t.Parallel()
	latest, err := migrations.Latest(dialect.SQLite)
	require.NoError(t, err)
	dsn := filepath.Join(t.TempDir(), "readpast.db")
	srv := startServe(t, dsn, "--poll", "50ms", "--grace", "1s")
	require.Equal(t, 0, srv.stop(), "logs:\n%s", srv.logs.String())
	logs := srv.logs.String()
	for v := uint(1); v <= latest; v++ {
		require.Regexp(t, fmt.Sprintf(`msg="schema migration applied" version=%d name=\S+`, v), logs)
	}
	again := startServe(t, dsn, "--poll", "50ms", "--grace", "1s")
	require.Equal(t, 0, again.stop())
	require.NotContains(t, again.logs.String(), "schema migration applied", "a current store applies nothing")

	var out bytes.Buffer
	fresh := "sqlite://" + filepath.Join(t.TempDir(), "m.db")
	require.Equal(t, 0, run(context.Background(), []string{"migrate", "up", "--dsn", fresh}, envOf(nil), &out, &out), out.String())
	require.Contains(t, out.String(), "applied migration 1 (baseline)")
}
