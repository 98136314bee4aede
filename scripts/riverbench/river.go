package main

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"readpast/internal/bench"
	"readpast/internal/target"
)

type benchArgs struct{}

func (benchArgs) Kind() string { return "bench" }

// bodyWorker is River's worker for every mode: with no target it does
// nothing (`river bench`'s job); with a pool it runs the body there, as a
// DBA's worker that runs a task's SQL would: a connection from the target
// pool, the statement, the connection back; with an executor it runs the body
// through ReadPast's own (target.Run: the same connection handling, session
// reset and cancel as ReadPast's workers).
type bodyWorker struct {
	river.WorkerDefaults[benchArgs]
	target *pgxpool.Pool // River-SQL
	exec   target.Target // River with ReadPast's executor
	body   string
}

func (w *bodyWorker) Work(ctx context.Context, _ *river.Job[benchArgs]) error {
	switch {
	case w.exec != nil:
		_, err := w.exec.Run(ctx, w.body, nil)
		return err
	case w.target != nil:
		_, err := w.target.Exec(ctx, w.body)
		return err
	}
	return nil
}

// bodyMode says how River's worker runs a job.
type bodyMode int

const (
	noBody       bodyMode = iota // River doing nothing
	plainBody                    // the body on a pool of its own (River-SQL)
	executorBody                 // the body through ReadPast's executor (River-reset)
)

// riverRun is River's burn-down with `river bench --num-total-jobs`'s settings
// (fetch cooldown 2 ms, fetch poll 20 ms, the jobs table truncated and
// vacuumed first, completions counted from the client's completion events).
// Unless mode is noBody each job runs body on targetConns connections to the
// same database.
func riverRun(ctx context.Context, url string, jobs, workers, targetConns int, mode bodyMode, body string) (drain, error) {
	var d drain
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return d, err
	}
	defer pool.Close()
	drv := riverpgxv5.New(pool)
	migrator, err := rivermigrate.New(drv, nil)
	if err != nil {
		return d, err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return d, err
	}
	for _, q := range []string{"TRUNCATE river_job", "VACUUM FULL river_job"} {
		if _, err := pool.Exec(ctx, q); err != nil {
			return d, err
		}
	}
	w := &bodyWorker{body: body}
	switch mode {
	case plainBody:
		if w.target, err = pgxpool.New(ctx, withPoolSize(url, targetConns)); err != nil {
			return d, err
		}
		defer w.target.Close()
	case executorBody:
		if w.exec, err = target.Open(ctx, withPoolSize(url, targetConns)); err != nil {
			return d, err
		}
		defer w.exec.Close()
	}
	ws := river.NewWorkers()
	river.AddWorker(ws, w)
	client, err := river.NewClient(drv, &river.Config{
		FetchCooldown:     2 * time.Millisecond,
		FetchPollInterval: 20 * time.Millisecond,
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: workers}},
		Workers:           ws,
	})
	if err != nil {
		return d, err
	}
	params := make([]river.InsertManyParams, 0, 1000)
	for left := jobs; left > 0; left -= len(params) {
		params = params[:0]
		for i := 0; i < min(1000, left); i++ {
			params = append(params, river.InsertManyParams{Args: benchArgs{}})
		}
		if _, err := client.InsertManyFast(ctx, params); err != nil {
			return d, err
		}
	}

	// Completion events come once the completer has committed them, as `river
	// bench` counts; polling the table would load the server being measured.
	completed, cancelSub := client.SubscribeConfig(&river.SubscribeConfig{ChanSize: jobs,
		Kinds: []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed}})
	defer cancelSub()
	meter, err := bench.NewCPUMeter(ctx, url)
	if err != nil {
		return d, err
	}
	server0, err := meter.Used()
	if err != nil {
		return d, err
	}
	self0 := bench.ProcessCPU()
	start := time.Now()
	if err := client.Start(ctx); err != nil {
		return d, err
	}
	var failed atomic.Int64
	for n := 0; n < jobs; n++ {
		select {
		case ev := <-completed:
			if ev.Kind != river.EventKindJobCompleted {
				failed.Add(1)
			}
		case <-ctx.Done():
			return d, ctx.Err()
		}
	}
	took := time.Since(start)
	server1, err := meter.Used()
	if err != nil {
		return d, err
	}
	d = newDrain(jobs, took, server1-server0, bench.ProcessCPU()-self0)
	stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_ = client.Stop(stopCtx)
	if failed.Load() > 0 {
		return d, fmt.Errorf("%d jobs failed: is the body %q valid SQL?", failed.Load(), strings.TrimSpace(body))
	}
	var left int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE state <> 'completed'`).Scan(&left); err != nil {
		return d, err
	}
	if left > 0 {
		return d, fmt.Errorf("%d jobs are not completed after %d completion events", left, jobs)
	}
	return d, nil
}
