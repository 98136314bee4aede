package selftest

import (
	"context"
	"database/sql"
	"fmt"
)

// rowVersioning is a SQL Server database's READ_COMMITTED_SNAPSHOT and
// ALLOW_SNAPSHOT_ISOLATION: they decide how READ COMMITTED reads (row
// versions or shared locks) and so how READPAST and the probes' lock reads
// behave. The scratch database takes the store database's, so the lock probes
// prove the semantics the store runs under (a plain CREATE DATABASE has both
// off on boxed SQL Server, where docs/SQLSERVER.md recommends RCSI on).
type rowVersioning struct {
	rcsi, snapshot bool
}

// readRowVersioning reads database name's settings from sys.databases.
func readRowVersioning(ctx context.Context, db *sql.DB, name string) (rowVersioning, error) {
	var v rowVersioning
	var snapshotState int
	err := db.QueryRowContext(ctx, "SELECT is_read_committed_snapshot_on, snapshot_isolation_state FROM sys.databases WHERE name = @name;",
		sql.Named("name", name)).Scan(&v.rcsi, &snapshotState)
	v.snapshot = snapshotState == 1 // 1: ON (3: in transition to ON)
	return v, err
}

// alterStatements sets database name to v: ALTER DATABASE ... SET
// READ_COMMITTED_SNAPSHOT needs no other session in the database (the scratch
// was just created; WITH ROLLBACK IMMEDIATE ends any that is).
func (v rowVersioning) alterStatements(name string) string {
	return fmt.Sprintf("ALTER DATABASE %s SET READ_COMMITTED_SNAPSHOT %s WITH ROLLBACK IMMEDIATE;\nALTER DATABASE %s SET ALLOW_SNAPSHOT_ISOLATION %s;",
		quoteName(name), onOff(v.rcsi), quoteName(name), onOff(v.snapshot))
}

// String says the settings as the report's header shows them.
func (v rowVersioning) String() string {
	return fmt.Sprintf("READ_COMMITTED_SNAPSHOT %s, ALLOW_SNAPSHOT_ISOLATION %s", onOff(v.rcsi), onOff(v.snapshot))
}

func onOff(b bool) string {
	if b {
		return "ON"
	}
	return "OFF"
}
