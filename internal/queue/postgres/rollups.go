package postgres

import (
	"context"
	"time"

	"readpast/internal/queue"
)

// Throughput implements queue.Store: the buckets of readpast_throughput, which
// readpast_end_attempts keeps with the log rows.
func (s *Store) Throughput(ctx context.Context, q queue.ThroughputQuery) ([]queue.ThroughputPoint, error) {
	rows, err := s.pool.Query(ctx, `SELECT bucket, queue, outcome, n, busy_ms FROM readpast_throughput
		WHERE span = $1 AND bucket >= date_trunc($1, $2::timestamptz) ORDER BY bucket, queue, outcome`, string(q.Span), q.Since)
	if err != nil {
		return nil, wrap(err, "reading the throughput rollup")
	}
	defer rows.Close()
	var out []queue.ThroughputPoint
	for rows.Next() {
		var (
			p       queue.ThroughputPoint
			outcome string
			busy    int64
		)
		if err := rows.Scan(&p.At, &p.Queue, &outcome, &p.N, &busy); err != nil {
			return nil, wrap(err, "reading the throughput rollup")
		}
		p.At, p.Outcome, p.Busy = p.At.UTC(), queue.Outcome(outcome), time.Duration(busy)*time.Millisecond
		out = append(out, p)
	}
	return out, wrap(rows.Err(), "reading the throughput rollup")
}

// PurgeRollups implements queue.Store.
func (s *Store) PurgeRollups(ctx context.Context, now time.Time) (int64, error) {
	tag, err := s.execTag(ctx, `DELETE FROM readpast_throughput
		WHERE (span = 'minute' AND bucket < $1) OR (span = 'hour' AND bucket < $2)`,
		now.Add(-queue.RollupMinutesKept), now.Add(-queue.RollupHoursKept))
	if err != nil {
		return 0, wrap(err, "purging the throughput rollup")
	}
	return tag.RowsAffected(), nil
}
