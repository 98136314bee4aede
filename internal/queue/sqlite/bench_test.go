package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"readpast/internal/queue"
	"readpast/internal/queue/queuetest"
)

func BenchmarkHotPath(b *testing.B) {
	s, err := Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"), queue.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(context.Background()); err != nil {
		b.Fatal(err)
	}
	queuetest.BenchmarkHotPath(b, s)
}
