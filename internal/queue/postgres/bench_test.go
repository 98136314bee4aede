package postgres_test

import (
	"testing"

	"readpast/internal/queue/queuetest"
	"readpast/internal/testenv"
)

func BenchmarkHotPath(b *testing.B) { queuetest.BenchmarkHotPath(b, testenv.Postgres) }

func BenchmarkSchedules(b *testing.B)   { queuetest.BenchmarkSchedules(b, testenv.Postgres) }
func BenchmarkTargetClaim(b *testing.B) { queuetest.BenchmarkTargetClaim(b, testenv.Postgres) }
