package target_test

import (
	"context"
	"testing"

	"readpast/internal/target"
	"readpast/internal/testenv"
)

// BenchmarkRunNoop is the target's share of one task on the hot path: take a
// connection, run `SELECT 1`, reset the session, give the connection back (on
// PostgreSQL the reset travels with the body: one round trip). Parallel, as
// a node's workers run. On PostgreSQL "labelled" is the same with the task's
// label (target.WithLabel), as a node's workers run it: the SET
// application_name that travels with the body is its cost.
func BenchmarkRunNoop(b *testing.B) {
	for _, d := range testenv.Dialects() {
		b.Run(string(d), func(b *testing.B) {
			e := &testenv.Env{Dialect: d, DSN: testenv.NewDSN(b, d)}
			tgt, err := target.Open(b.Context(), e.DSN)
			if err != nil {
				b.Fatal(err)
			}
			defer tgt.Close()
			run := func(b *testing.B, ctx context.Context) {
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
			}
			b.Run("plain", func(b *testing.B) { run(b, b.Context()) })
			if d == testenv.Postgres {
				b.Run("labelled", func(b *testing.B) { run(b, target.WithLabel(b.Context(), "task 1234567")) })
			}
		})
	}
}
