package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// `readpast selftest` prints the table and exits 0 when every probe passes
// (SQLite here; internal/selftest runs the probes on every dialect), 2 for a
// bad flag and 3 when it cannot reach the server.
func TestSelftestCommand(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "store.db")
	code := run(context.Background(), []string{"selftest", "--dsn", dsn, "--soak", "1s", "--tasks", "200"}, envOf(nil), &out, &errOut)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	require.Contains(t, out.String(), "PASS    exactly once")
	require.Contains(t, out.String(), "0 failed")

	errOut.Reset()
	require.Equal(t, 2, run(context.Background(), []string{"selftest", "--soak", "x"}, envOf(nil), &out, &errOut))
	require.Contains(t, errOut.String(), "-soak")

	errOut.Reset()
	code = run(context.Background(), []string{"selftest", "--dsn", "postgres://nobody@127.0.0.1:1/none?connect_timeout=2"}, envOf(nil), &out, &errOut)
	require.Equal(t, 3, code, errOut.String())
	require.Contains(t, errOut.String(), "readpast selftest: connecting")
}
