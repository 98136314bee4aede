package target

import (
	"context"
	"path/filepath"
	"testing"

	"readpast/internal/testpg"
)

// BenchmarkRunNoop is the target's share of one task on the hot path: take a
// connection, run `SELECT 1`, reset the session, give the connection back (on
// PostgreSQL the reset travels with the body: one round trip). Parallel, as
// a node's workers run.
func BenchmarkRunNoop(b *testing.B) {
	for _, d := range []struct {
		name string
		dsn  func(b *testing.B) string
	}{
		{"sqlite", func(b *testing.B) string { return filepath.Join(b.TempDir(), "t.db") }},
		{"postgres", func(b *testing.B) string { return testpg.Shared(b).NewDatabase(b) }},
	} {
		b.Run(d.name, func(b *testing.B) {
			ctx := context.Background()
			tgt, err := Open(ctx, d.dsn(b))
			if err != nil {
				b.Fatal(err)
			}
			defer tgt.Close()
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := tgt.Run(ctx, "SELECT 1", nil); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
