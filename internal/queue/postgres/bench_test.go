package postgres

import (
	"context"
	"testing"

	"readpast/internal/queue"
	"readpast/internal/queue/queuetest"
	"readpast/internal/testpg"
)

func BenchmarkHotPath(b *testing.B) {
	s, err := Open(context.Background(), testpg.Shared(b).NewDatabase(b), queue.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(context.Background()); err != nil {
		b.Fatal(err)
	}
	queuetest.BenchmarkHotPath(b, s)
}
