package bench

import (
	"context"
	"database/sql"

	"github.com/jackc/pgx/v5"

	"readpast/internal/appname"
	"readpast/internal/dialect"
	"readpast/internal/mssqllogin"
)

// writeTxCount reads how many write transactions the server has committed (each
// one a WAL flush, the cost that batching saves), or -1 where the dialect cannot
// tell (SQLite). Read-only transactions, such as a no-op task body, are not
// counted.
func writeTxCount(ctx context.Context, c Config) int64 {
	switch c.Dialect {
	case dialect.Postgres:
		// The next transaction id counts every transaction that wrote, server-wide
		// and at once; pg_stat_database's counters lag by up to ten seconds for an
		// idle backend. Reading it assigns no id.
		conn, err := pgx.Connect(ctx, c.DSN)
		if err != nil {
			return -1
		}
		defer conn.Close(ctx)
		var n int64
		if err := conn.QueryRow(ctx, `SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint`).Scan(&n); err != nil {
			return -1
		}
		return n
	case dialect.SQLServer:
		connector, _, err := mssqllogin.Connector(c.DSN, appname.For("bench", ""))
		if err != nil {
			return -1
		}
		db := sql.OpenDB(connector)
		defer db.Close()
		var n int64
		// Cumulative despite its name; needs VIEW SERVER STATE.
		err = db.QueryRowContext(ctx, `SELECT cntr_value FROM sys.dm_os_performance_counters
			WHERE counter_name = 'Write Transactions/sec' AND instance_name = DB_NAME()`).Scan(&n)
		if err != nil {
			return -1
		}
		return n
	}
	return -1
}
