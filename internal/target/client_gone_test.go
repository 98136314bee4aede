package target_test

import (
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"readpast/internal/faultproxy"
	"readpast/internal/target"
	"readpast/internal/testpg"
)

// A body whose node is cut off from its target is stopped by the server
// itself, soon after the line went: ReadPast's sessions carry
// client_connection_check_interval (PostgreSQL 14 and later). Without it the
// server noticed nothing until the statement ended, and the body ran on
// beside the attempt of the node that took the task over (issue 25; the
// partition chaos test's "cut b").
func TestServerStopsTheBodyOfAClientCutOff(t *testing.T) {
	t.Parallel()
	srv := testpg.Shared(t)
	dsn := srv.NewDatabase(t)
	ctx := t.Context()
	p := faultproxy.Start(t, "unix", filepath.Join(srv.SocketDir(), ".s.PGSQL.5432"))
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	tgt, err := target.Open(ctx, "postgres://postgres@"+p.Addr()+u.Path+"?sslmode=disable")
	require.NoError(t, err)
	t.Cleanup(func() { tgt.Close() })

	const name = "readpast task 1 lease 1"
	go func() { _, _ = tgt.Run(target.WithSessionName(ctx, name), "SELECT pg_sleep(60)", nil) }()
	watcher, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer watcher.Close(ctx)
	running := func() bool {
		var n int
		require.NoError(t, watcher.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND starts_with(query, '/* ' || $1 || ' */ ') AND state = 'active'`, name).Scan(&n))
		return n > 0
	}
	require.Eventually(t, running, 10*time.Second, 10*time.Millisecond, "the body runs")
	var version int
	require.NoError(t, watcher.QueryRow(ctx, `SELECT current_setting('server_version_num')::int`).Scan(&version))
	if version < 140000 {
		t.Skipf("PostgreSQL %d has no client_connection_check_interval", version)
	}

	p.Cut()
	cut := time.Now()
	require.Eventually(t, func() bool { return !running() }, 5*time.Second, 20*time.Millisecond,
		"the server stops the body of a client that went away")
	t.Logf("the server ended the cut-off body %s after the cut", time.Since(cut).Round(time.Millisecond))
}
