package sqlite_test

import (
	"testing"

	"readpast/internal/queue/queuetest"
	"readpast/internal/testenv"
)

func BenchmarkHotPath(b *testing.B) { queuetest.BenchmarkHotPath(b, testenv.SQLite) }

func BenchmarkSchedules(b *testing.B)   { queuetest.BenchmarkSchedules(b, testenv.SQLite) }
func BenchmarkTargetClaim(b *testing.B) { queuetest.BenchmarkTargetClaim(b, testenv.SQLite) }
