package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"readpast/internal/queue"
	"readpast/internal/queue/queuetest"
)

func TestConformance(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		queuetest.Exercise(t, queuetest.Harness{
			SerialWriters: true,
			NewStore: func(t *testing.T) queue.Store {
				s, err := Open(context.Background(), filepath.Join(t.TempDir(), "readpast.db"), queue.Options{})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			},
			Exec: func(t *testing.T, s queue.Store, query string) {
				if _, err := s.(*Store).w.Exec(query); err != nil {
					t.Fatalf("exec %q: %v", query, err)
				}
			},
		})
	})
}
