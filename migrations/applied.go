package migrations

import (
	"context"
	"database/sql"
	"fmt"

	"readpast/internal/dialect"
)

// appliedChecks answer, for each dialect and version, whether that
// migration's changes are in the database (1) or not (0). golang-migrate
// marks a version dirty, runs its file, then marks it clean in a separate
// transaction, so a client that dies between the file's COMMIT and that mark
// leaves a dirty version whose changes are all there; running the file again
// would fail on them (a column or table that exists) for ever. Each file is
// all or nothing (Up), so one object it creates tells. Every new version adds
// its check here on every dialect (TestEveryMigrationHasAnAppliedCheck).
var appliedChecks = map[dialect.Dialect]map[uint]string{
	dialect.SQLServer: {
		1:  "SELECT CASE WHEN OBJECT_ID(N'dbo.readpast_tasks', N'U') IS NULL THEN 0 ELSE 1 END;",
		2:  "SELECT CASE WHEN COL_LENGTH(N'dbo.readpast_tasks', N'committed_token') IS NULL THEN 0 ELSE 1 END;",
		3:  "SELECT 1;", // the file changes nothing on SQL Server
		4:  "SELECT CASE WHEN COL_LENGTH(N'dbo.readpast_tasks', N'target') IS NULL THEN 0 ELSE 1 END;",
		5:  "SELECT CASE WHEN OBJECT_ID(N'dbo.readpast_jobs', N'U') IS NULL THEN 0 ELSE 1 END;",
		6:  "SELECT CASE WHEN OBJECT_ID(N'dbo.readpast_alert_events', N'U') IS NULL THEN 0 ELSE 1 END;",
		7:  "SELECT CASE WHEN OBJECT_ID(N'dbo.readpast_bulk_ops', N'U') IS NULL THEN 0 ELSE 1 END;",
		8:  "SELECT CASE WHEN COL_LENGTH(N'dbo.readpast_groups', N'has_free') IS NULL THEN 0 ELSE 1 END;",
		9:  "SELECT CASE WHEN COL_LENGTH(N'dbo.readpast_counts', N'stripe') IS NULL THEN 0 ELSE 1 END;",
		10: "SELECT CASE WHEN EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'dbo.readpast_tasks') AND name = N'readpast_tasks_ready_target') THEN 1 ELSE 0 END;",
		11: "SELECT CASE WHEN OBJECT_ID(N'dbo.readpast_results', N'U') IS NULL THEN 0 ELSE 1 END;",
		12: "SELECT CASE WHEN COL_LENGTH(N'dbo.readpast_schedules', N'targets') IS NULL THEN 0 ELSE 1 END;",
		13: "SELECT CASE WHEN COL_LENGTH(N'dbo.readpast_job_runs', N'fanout_failed') IS NULL THEN 0 ELSE 1 END;",
		14: "SELECT 1;", // nor this one
	},
	dialect.Postgres: {
		1:  "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = 'readpast_tasks'",
		2:  "SELECT count(*) FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'readpast_tasks' AND column_name = 'committed_token'",
		3:  "SELECT count(*) FROM pg_catalog.pg_proc WHERE pronamespace = current_schema()::regnamespace AND proname = 'readpast_release_uncounted'",
		4:  "SELECT count(*) FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'readpast_tasks' AND column_name = 'target'",
		5:  "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = 'readpast_jobs'",
		6:  "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = 'readpast_alert_events'",
		7:  "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = 'readpast_bulk_ops'",
		8:  "SELECT 1", // the file changes nothing on PostgreSQL
		9:  "SELECT 1", // nor this one
		10: "SELECT count(*) FROM pg_catalog.pg_indexes WHERE schemaname = current_schema() AND indexname = 'readpast_tasks_ready_target'",
		11: "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = 'readpast_results'",
		12: "SELECT count(*) FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'readpast_schedules' AND column_name = 'targets'",
		13: "SELECT count(*) FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'readpast_job_runs' AND column_name = 'fanout_failed'",
		14: "SELECT count(*) FROM pg_proc WHERE proname = 'readpast_retry' AND pronamespace = current_schema()::regnamespace AND prosrc LIKE '%fanout_left%'",
	},
	dialect.SQLite: {
		1:  "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'readpast_tasks'",
		2:  "SELECT 1", // the file changes nothing on SQLite
		3:  "SELECT 1", // nor this one
		4:  "SELECT count(*) FROM pragma_table_info('readpast_tasks') WHERE name = 'target'",
		5:  "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'readpast_jobs'",
		6:  "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'readpast_alert_events'",
		7:  "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'readpast_bulk_ops'",
		8:  "SELECT 1", // the file changes nothing on SQLite
		9:  "SELECT 1", // nor this one
		10: "SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name = 'readpast_tasks_ready_target'",
		11: "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'readpast_results'",
		12: "SELECT count(*) FROM pragma_table_info('readpast_schedules') WHERE name = 'targets'",
		13: "SELECT count(*) FROM pragma_table_info('readpast_job_runs') WHERE name = 'fanout_failed'",
		14: "SELECT 1", // nor this one
	},
}

// migrationApplied reports whether version v's changes are in db.
func migrationApplied(ctx context.Context, d dialect.Dialect, db *sql.DB, v uint) (bool, error) {
	q, ok := appliedChecks[d][v]
	if !ok {
		return false, fmt.Errorf("no check of whether %s migration %d was applied (migrations/applied.go)", d, v)
	}
	var n int
	if err := db.QueryRowContext(ctx, q).Scan(&n); err != nil {
		return false, fmt.Errorf("checking whether %s migration %d was applied: %w", d, v, err)
	}
	return n > 0, nil
}
