package target_test

import (
	"testing"

	"readpast/internal/target"
	"readpast/internal/testenv"
)

// BenchmarkRunNoop is the target's share of one task on the hot path: take a
// connection, run `SELECT 1`, reset the session, give the connection back (on
// PostgreSQL the reset travels with the body: one round trip). Parallel, as
// a node's workers run.
func BenchmarkRunNoop(b *testing.B) {
	for _, d := range testenv.Dialects() {
		b.Run(string(d), func(b *testing.B) {
			e := &testenv.Env{Dialect: d, DSN: testenv.NewDSN(b, d)}
			tgt, err := target.Open(b.Context(), e.DSN)
			if err != nil {
				b.Fatal(err)
			}
			defer tgt.Close()
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := tgt.Run(b.Context(), "SELECT 1", nil); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
