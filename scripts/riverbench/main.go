// Command riverbench runs River's burn-down with the settings of `river bench
// --num-total-jobs` (fetch cooldown 2 ms, fetch poll 20 ms, 2,000 workers, the
// jobs table truncated and vacuumed first, completions counted from the
// client's completion events), so that ReadPast's `readpast bench` throughput
// can be compared with River's on the same server (docs/BENCHMARKS.md). It is
// a separate module: River is not a dependency of ReadPast.
//
//	go run . --database-url postgres://… --jobs 200000
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

type noopArgs struct{}

func (noopArgs) Kind() string { return "noop" }

type noopWorker struct {
	river.WorkerDefaults[noopArgs]
	done *atomic.Int64
}

func (w *noopWorker) Work(context.Context, *river.Job[noopArgs]) error {
	w.done.Add(1)
	return nil
}

func main() {
	url := flag.String("database-url", "", "PostgreSQL URL of a scratch database")
	jobs := flag.Int("jobs", 200000, "no-op jobs to insert, then work off")
	workers := flag.Int("workers", 2000, "MaxWorkers of the queue (river bench uses 2,000)")
	flag.Parse()
	if err := run(*url, *jobs, *workers); err != nil {
		fmt.Fprintln(os.Stderr, "riverbench:", err)
		os.Exit(1)
	}
}

func run(url string, jobs, workers int) error {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return err
	}
	defer pool.Close()
	drv := riverpgxv5.New(pool)
	migrator, err := rivermigrate.New(drv, nil)
	if err != nil {
		return err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return err
	}
	for _, q := range []string{"TRUNCATE river_job", "VACUUM FULL river_job"} {
		if _, err := pool.Exec(ctx, q); err != nil {
			return err
		}
	}
	var done atomic.Int64
	ws := river.NewWorkers()
	river.AddWorker(ws, &noopWorker{done: &done})
	client, err := river.NewClient(drv, &river.Config{
		FetchCooldown:     2 * time.Millisecond,
		FetchPollInterval: 20 * time.Millisecond,
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: workers}},
		Workers:           ws,
	})
	if err != nil {
		return err
	}
	start := time.Now()
	params := make([]river.InsertManyParams, 0, 1000)
	for left := jobs; left > 0; left -= len(params) {
		params = params[:0]
		for i := 0; i < min(1000, left); i++ {
			params = append(params, river.InsertManyParams{Args: noopArgs{}})
		}
		if _, err := client.InsertManyFast(ctx, params); err != nil {
			return err
		}
	}
	fmt.Printf("inserted %d jobs in %.2f s\n", jobs, time.Since(start).Seconds())

	// Completion events come once the completer has committed them, as `river
	// bench` counts; polling the table would load the server being measured.
	completed, cancelSub := client.SubscribeConfig(&river.SubscribeConfig{ChanSize: jobs, Kinds: []river.EventKind{river.EventKindJobCompleted}})
	defer cancelSub()
	start = time.Now()
	if err := client.Start(ctx); err != nil {
		return err
	}
	for n := 0; n < jobs; n++ {
		<-completed
	}
	took := time.Since(start)
	var left int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE state <> 'completed'`).Scan(&left); err != nil {
		return err
	}
	if left > 0 {
		return fmt.Errorf("%d jobs are not completed after %d completion events", left, jobs)
	}
	stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_ = client.Stop(stopCtx)
	fmt.Printf("worked off %d jobs in %.2f s: %.0f jobs/s (%d workers)\n", jobs, took.Seconds(), float64(jobs)/took.Seconds(), workers)
	return nil
}
