package bench

import (
	"context"
	"database/sql"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/microsoft/go-mssqldb" // registers "sqlserver" for the commit counter
)

// commitCount reads the server's committed-transaction counter for the store
// database, or -1 where the dialect cannot tell (SQLite).
func commitCount(ctx context.Context, c Config) int64 {
	switch c.Dialect {
	case "postgres":
		// Backends flush their statistics about once a second.
		time.Sleep(1500 * time.Millisecond)
		conn, err := pgx.Connect(ctx, c.DSN)
		if err != nil {
			return -1
		}
		defer conn.Close(ctx)
		var n int64
		if err := conn.QueryRow(ctx, `SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()`).Scan(&n); err != nil {
			return -1
		}
		return n
	case "sqlserver":
		db, err := sql.Open("sqlserver", c.DSN)
		if err != nil {
			return -1
		}
		defer db.Close()
		var n int64
		// Cumulative despite its name; needs VIEW SERVER STATE.
		err = db.QueryRowContext(ctx, `SELECT cntr_value FROM sys.dm_os_performance_counters
			WHERE counter_name = 'Transactions/sec' AND instance_name = DB_NAME()`).Scan(&n)
		if err != nil {
			return -1
		}
		return n
	}
	return -1
}
