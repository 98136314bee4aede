package migrations

import (
	"testing"

	"github.com/stretchr/testify/require"

	"readpast/internal/dialect"
)

// Every version of every dialect says how to tell that it was applied.
func TestEveryMigrationHasAnAppliedCheck(t *testing.T) {
	t.Parallel()
	for _, d := range []dialect.Dialect{dialect.SQLite, dialect.Postgres, dialect.SQLServer} {
		versions, err := embeddedVersions(d)
		require.NoError(t, err)
		for _, v := range versions {
			require.NotEmpty(t, appliedChecks[d][v], "%s migration %d has no check in appliedChecks", d, v)
		}
	}
}
