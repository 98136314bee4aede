package postgres_test

import (
	"testing"

	"readpast/internal/queue/queuetest"
	"readpast/internal/testenv"
)

func BenchmarkHotPath(b *testing.B) { queuetest.BenchmarkHotPath(b, testenv.Postgres) }
