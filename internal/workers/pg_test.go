package workers

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// serverSessionsRunning counts PostgreSQL sessions whose current query starts
// with prefix, other than the one asking.
func serverSessionsRunning(t *testing.T, e env, prefix string) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), e.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	err = conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
		WHERE state = 'active' AND pid <> pg_backend_pid() AND query LIKE 'SELECT ' || $1 || '%'`, prefix).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
