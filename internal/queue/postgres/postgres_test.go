package postgres_test

import (
	"os"
	"testing"

	"readpast/internal/queue/queuetest"
	"readpast/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// TestConformance runs the shared suite on a private PostgreSQL server, one fresh
// database per test.
func TestConformance(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		queuetest.Exercise(t, queuetest.Harness{Dialect: testenv.Postgres})
	})
}
