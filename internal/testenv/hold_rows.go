package testenv

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// HoldRows runs stmt in a transaction of a session of its own on the
// PostgreSQL or SQL Server database at dsn, named appName when it is not "",
// and keeps that transaction open, with the row locks stmt took, until
// release (which may be called more than once) or the test's end. It returns
// the session's id (pg_backend_pid, @@SPID): a blocker for tests of what
// waits on a lock and what ends a session.
func HoldRows(t testing.TB, d Dialect, dsn, appName, stmt string) (session string, release func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := false
	once := func(end func()) func() {
		return func() {
			if !done {
				done = true
				end()
			}
		}
	}
	if d == Postgres {
		cfg, err := pgx.ParseConfig(dsn)
		require.NoError(t, err)
		if appName != "" {
			cfg.RuntimeParams["application_name"] = appName
		}
		conn, err := pgx.ConnectConfig(ctx, cfg)
		require.NoError(t, err)
		tx, err := conn.Begin(ctx)
		require.NoError(t, err)
		release = once(func() {
			_ = tx.Rollback(context.Background())
			_ = conn.Close(context.Background())
		})
		t.Cleanup(release)
		_, err = tx.Exec(ctx, stmt)
		require.NoError(t, err)
		var pid int
		require.NoError(t, tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid))
		return strconv.Itoa(pid), release
	}
	require.Equal(t, SQLServer, d, "HoldRows needs sessions: PostgreSQL or SQL Server")
	if appName != "" {
		dsn += "&app+name=" + appName
	}
	db := openSQLServer(t, dsn)
	conn, err := db.Conn(ctx)
	require.NoError(t, err)
	release = once(func() {
		_, _ = conn.ExecContext(context.Background(), "IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;")
		_ = conn.Close()
		_ = db.Close()
	})
	t.Cleanup(release)
	_, err = conn.ExecContext(ctx, "BEGIN TRANSACTION; "+stmt+";")
	require.NoError(t, err)
	var spid int
	require.NoError(t, conn.QueryRowContext(ctx, "SELECT CAST(@@SPID AS int)").Scan(&spid))
	return strconv.Itoa(spid), release
}
