package migrations

import (
	"context"
	"database/sql"
	"fmt"

	"readpast/internal/dialect"
	"readpast/internal/queue"
)

// LegacyTable is the version table of the pre-release migration chain
// (versions 1-14, before the one baseline per dialect). Its name differs from
// Table on purpose: a database that has it was made by that chain, whatever
// version numbers the new chain reaches later.
const LegacyTable = "readpast_schema_migrations"

// legacyTableSQL counts the pre-release version table in the schema the store
// uses (golang-migrate's own rule for where its table lives).
var legacyTableSQL = map[dialect.Dialect]string{
	dialect.SQLite:    `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = '` + LegacyTable + `'`,
	dialect.Postgres:  `SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = current_schema() AND tablename = '` + LegacyTable + `'`,
	dialect.SQLServer: `SELECT CASE WHEN OBJECT_ID(N'` + LegacyTable + `', N'U') IS NULL THEN 0 ELSE 1 END`,
}

// refusePreRelease fails with ErrSchemaPreRelease when db holds the
// pre-release chain's version table. No release can upgrade that schema (the
// baseline is not the chain's version 14 under another name: it starts a new
// history), and running the baseline over it would fail half-way on the first
// table that exists, so the DBA is told what to do instead.
func refusePreRelease(ctx context.Context, d dialect.Dialect, db *sql.DB) error {
	q, ok := legacyTableSQL[d]
	if !ok {
		return fmt.Errorf("no pre-release check for dialect %s", d)
	}
	var n int
	if err := db.QueryRowContext(ctx, q).Scan(&n); err != nil {
		return fmt.Errorf("checking for a pre-release ReadPast schema: %w", err)
	}
	if n > 0 {
		return fmt.Errorf("%w: the table %s says this database was migrated by a pre-release build of ReadPast, whose schema this release does not upgrade; "+
			"finish or export its tasks, drop every readpast_ table (or use a new database or schema), then run migrate again",
			queue.ErrSchemaPreRelease, LegacyTable)
	}
	return nil
}
