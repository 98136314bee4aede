package bench

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"readpast/internal/dialect"
	"readpast/internal/queue"
	"readpast/internal/target"
)

// LimitResult is what the target can do without the queue, measured beside
// the drain so that every run shows the drain's ratio to it.
type LimitResult struct {
	// BodyPerSec: as many goroutines as the node has workers, each running
	// the drain's body through the target in a loop (the body, the session
	// reset, the connection back to the pool): pgbench's `SELECT 1;
	// DISCARD ALL` on as many connections, with no queue.
	BodyPerSec          float64 `json:"body_and_reset_per_sec"`
	BodyServerCPUPerRun float64 `json:"body_and_reset_server_cpu_us,omitempty"`
	// NamedPerSec: the same with the attempt's mark, as the executor marks
	// a body (target.WithSessionName: on PostgreSQL a comment at the head of
	// each batch, on SQL Server CONTEXT_INFO): all a worker sends.
	NamedPerSec          float64 `json:"named_body_and_reset_per_sec"`
	NamedServerCPUPerRun float64 `json:"named_body_and_reset_server_cpu_us,omitempty"`
	// OneConnPerSec (SQLite): one connection running `SELECT 1` in a loop on
	// the store's file.
	OneConnPerSec float64 `json:"one_connection_select1_per_sec,omitempty"`
}

// limitFor is how long each limit is measured: long enough for a steady
// rate, short next to a drain.
const limitFor = 3 * time.Second

// limit measures the target's body-and-reset rate on c.Workers connections,
// without and with the attempt's mark, and on SQLite one
// connection's `SELECT 1` loop on the same file.
func limit(ctx context.Context, c Config) (*LimitResult, error) {
	r := &LimitResult{}
	var err error
	fmt.Fprintf(c.Progress, "limit: %s with its session reset on %d connections, no queue\n", noop, c.Workers)
	if r.BodyPerSec, r.BodyServerCPUPerRun, err = bodies(ctx, c, false); err != nil {
		return nil, err
	}
	if r.NamedPerSec, r.NamedServerCPUPerRun, err = bodies(ctx, c, true); err != nil {
		return nil, err
	}
	if c.Dialect == dialect.SQLite {
		if r.OneConnPerSec, err = oneConnection(ctx, c.DSN); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// bodies runs the drain's body through the target from c.Workers goroutines
// for limitFor, marked with an attempt if named, and returns the
// rate and the server's CPU per body (0 where it cannot be read).
func bodies(ctx context.Context, c Config, named bool) (perSec, serverUS float64, err error) {
	server := serverCPU(ctx, c)
	n, took, err := loop(ctx, c.Workers, func(ctx context.Context, i int64) error {
		if named {
			ctx = target.WithSessionName(ctx, queue.AttemptSessionName(queue.Lease{TaskID: i, Token: 1}))
		}
		_, err := c.Target.Run(ctx, noop, nil)
		return err
	})
	if err != nil {
		return 0, 0, err
	}
	return float64(n) / took.Seconds(), perTaskUS(server(), int(n)), nil
}

// loop runs f from n goroutines for limitFor and returns how many calls
// ended and how long they took; the first error stops it.
func loop(ctx context.Context, n int, f func(ctx context.Context, i int64) error) (int64, time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		count    atomic.Int64
		wg       sync.WaitGroup
		firstErr error
		once     sync.Once
	)
	deadline := time.Now().Add(limitFor)
	start := time.Now()
	for range n {
		wg.Go(func() {
			for time.Now().Before(deadline) && ctx.Err() == nil {
				if err := f(ctx, count.Add(1)); err != nil {
					once.Do(func() { firstErr = err; cancel() })
					return
				}
			}
		})
	}
	wg.Wait()
	return count.Load(), time.Since(start), firstErr
}

// oneConnection runs `SELECT 1` in a loop on one connection to the SQLite
// file dsn names, and returns the rate.
func oneConnection(ctx context.Context, dsn string) (float64, error) {
	_, path, err := dialect.Parse(dsn)
	if err != nil {
		return 0, err
	}
	db, err := sql.Open("sqlite", "file:"+strings.ReplaceAll(url.PathEscape(path), "%2F", "/")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return 0, err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	n, took, err := loop(ctx, 1, func(ctx context.Context, _ int64) error {
		var one int
		return conn.QueryRowContext(ctx, noop).Scan(&one)
	})
	if err != nil {
		return 0, fmt.Errorf("one connection's %s loop: %w", noop, err)
	}
	return float64(n) / took.Seconds(), nil
}
