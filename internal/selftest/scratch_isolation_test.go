package selftest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The scratch database takes the store database's row versioning, so the
// lock probes run under the READ COMMITTED the store runs under; a plain
// CREATE DATABASE has RCSI off on boxed SQL Server.
func TestScratchTakesTheStoresRowVersioning(t *testing.T) {
	on := rowVersioning{rcsi: true, snapshot: true}.alterStatements("s]x")
	require.Contains(t, on, "ALTER DATABASE [s]]x] SET READ_COMMITTED_SNAPSHOT ON WITH ROLLBACK IMMEDIATE;")
	require.Contains(t, on, "ALTER DATABASE [s]]x] SET ALLOW_SNAPSHOT_ISOLATION ON;")
	off := rowVersioning{}.alterStatements("s")
	require.Contains(t, off, "SET READ_COMMITTED_SNAPSHOT OFF")
	require.Contains(t, off, "SET ALLOW_SNAPSHOT_ISOLATION OFF")
}

// The ghost-record fact is read from the store's database, not from the
// scratch the probes just filled.
func TestGhostRecordsAreReadInTheStoreDatabase(t *testing.T) {
	q := ghostRecordsQuery("shop's")
	require.Contains(t, q, "OBJECT_ID(N'[shop''s].dbo.readpast_tasks')")
	require.Contains(t, q, "DB_ID(N'shop''s')")
	require.Contains(t, q, "[shop's].sys.indexes")
	require.NotContains(t, q, "DB_ID()", "DB_ID() is the scratch's")
	require.True(t, strings.Index(q, "IF @object IS NULL") < strings.Index(q, "dm_db_index_physical_stats"))
}
