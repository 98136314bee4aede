package migrations_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"readpast/internal/testenv"
)

// A migration whose file committed but whose version golang-migrate never
// marked clean (the client died in between) is kept, not run again: before,
// Up set the version back and ran the file again, which failed on the column
// it had added, on every later run.
func TestCommittedButDirtyMigrationIsKept(t *testing.T) {
	t.Parallel()
	testenv.ForEachDialect(t, func(t *testing.T, e *testenv.Env) {
		dirty := map[testenv.Dialect]string{
			testenv.SQLite:    "UPDATE readpast_schema_version SET dirty = 1",
			testenv.Postgres:  "UPDATE readpast_schema_version SET dirty = true",
			testenv.SQLServer: "UPDATE readpast_schema_version SET dirty = 1",
		}[e.Dialect]
		e.Exec(t, dirty)
		require.NoError(t, e.Store.Migrate(e.Ctx), "migrating a database whose last migration committed but stayed dirty")
		st, err := e.Store.SchemaVersion(e.Ctx)
		require.NoError(t, err)
		require.False(t, st.Dirty)
		require.Equal(t, st.Latest, st.Version)
	})
}
