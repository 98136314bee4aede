package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"readpast/internal/queue"
)

// countFinished adds by to the finished count of (q, state); every change into
// or out of a final state calls it in the same write transaction, so the
// counts are exact (queuetest: counts_stay_exact).
func countFinished(tx execer, q string, state queue.State, by int64) error {
	if by == 0 || !state.Finished() {
		return nil
	}
	_, err := tx.Exec(`INSERT INTO readpast_counts (queue, state, n) VALUES (?, ?, ?)
		ON CONFLICT (queue, state) DO UPDATE SET n = n + excluded.n`, q, state, by)
	if err != nil {
		return fmt.Errorf("counting finished tasks of %s: %w", q, err)
	}
	return nil
}

// spans are the throughput rollup's bucket widths, in microseconds.
var spans = []struct {
	span  queue.Span
	width int64
	keep  time.Duration
}{
	{queue.SpanMinute, int64(time.Minute / time.Microsecond), queue.RollupMinutesKept},
	{queue.SpanHour, int64(time.Hour / time.Microsecond), queue.RollupHoursKept},
}

// countAttempt adds one finished attempt to the throughput rollup.
func countAttempt(tx execer, q string, o queue.Outcome, finished, durationMS int64) error {
	for _, s := range spans {
		_, err := tx.Exec(`INSERT INTO readpast_throughput (span, bucket, queue, outcome, n, busy_ms) VALUES (?, ?, ?, ?, 1, ?)
			ON CONFLICT (span, bucket, queue, outcome) DO UPDATE SET n = n + 1, busy_ms = busy_ms + excluded.busy_ms`,
			s.span, finished-finished%s.width, q, o, durationMS)
		if err != nil {
			return fmt.Errorf("counting the attempt in the throughput rollup: %w", err)
		}
	}
	return nil
}

// Throughput implements queue.Store.
func (s *Store) Throughput(ctx context.Context, q queue.ThroughputQuery) ([]queue.ThroughputPoint, error) {
	width := int64(time.Minute / time.Microsecond)
	if q.Span == queue.SpanHour {
		width = int64(time.Hour / time.Microsecond)
	}
	since := micros(q.Since)
	rows, err := s.r.QueryContext(ctx, `SELECT bucket, queue, outcome, n, busy_ms FROM readpast_throughput
		WHERE span = ? AND bucket >= ? ORDER BY bucket, queue, outcome`, q.Span, since-since%width)
	if err != nil {
		return nil, fmt.Errorf("reading the throughput rollup: %w", err)
	}
	defer rows.Close()
	var out []queue.ThroughputPoint
	for rows.Next() {
		var (
			p        queue.ThroughputPoint
			at, busy int64
			outcome  string
		)
		if err := rows.Scan(&at, &p.Queue, &outcome, &p.N, &busy); err != nil {
			return nil, fmt.Errorf("reading the throughput rollup: %w", err)
		}
		p.At, p.Outcome, p.Busy = fromMicros(at), queue.Outcome(outcome), time.Duration(busy)*time.Millisecond
		out = append(out, p)
	}
	return out, rows.Err()
}

// PurgeRollups implements queue.Store.
func (s *Store) PurgeRollups(ctx context.Context, now time.Time) (int64, error) {
	var n int64
	err := s.write(ctx, "purging the throughput rollup", func(ctx context.Context, tx *sql.Tx, _ int64) error {
		r, err := tx.ExecContext(ctx, `DELETE FROM readpast_throughput
			WHERE (span = 'minute' AND bucket < ?) OR (span = 'hour' AND bucket < ?)`,
			micros(now.Add(-queue.RollupMinutesKept)), micros(now.Add(-queue.RollupHoursKept)))
		if err == nil {
			n, err = r.RowsAffected()
		}
		return err
	})
	return n, err
}
