package sqlite_test

import (
	"testing"

	"readpast/internal/queue/queuetest"
	"readpast/internal/testenv"
)

// TestConformance runs the shared suite on a fresh SQLite file per test.
func TestConformance(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		queuetest.Exercise(t, queuetest.Harness{Dialect: testenv.SQLite})
	})
}
