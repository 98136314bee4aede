package sqlserver_test

import (
	"os"
	"testing"

	"readpast/internal/queue/queuetest"
	"readpast/internal/testenv"
)

// TestConformance runs the shared suite on the SQL Server that
// READPAST_TEST_MSSQL_DSN names (a database created per test), and is skipped
// without one.
func TestConformance(t *testing.T) {
	t.Run("sqlserver", func(t *testing.T) {
		if os.Getenv(testenv.MSSQLDSNEnv) == "" {
			t.Skip(testenv.MSSQLDSNEnv + " not set: no SQL Server to run the suite on")
		}
		queuetest.Exercise(t, queuetest.Harness{Dialect: testenv.SQLServer})
	})
}
