package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"readpast/internal/bench"
	"readpast/internal/queue"
	"readpast/internal/queue/open"
	"readpast/internal/target"
)

// readpastRun is `readpast bench --only throughput`: tasks with the body
// drained by one node of the given workers, claim → body on the target →
// finish → log row, on the database at url (the store and the target).
func readpastRun(ctx context.Context, url string, tasks, workers int, progress io.Writer) (drain, error) {
	var d drain
	s, err := open.Store(ctx, url, queue.Options{})
	if err != nil {
		return d, err
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		return d, err
	}
	tgt, err := target.Open(ctx, url)
	if err != nil {
		return d, err
	}
	defer tgt.Close()
	r, err := bench.Run(ctx, bench.Config{Store: s, Target: tgt, Dialect: s.Dialect(), DSN: url, Tasks: tasks,
		Workers: workers, Only: map[string]bool{"throughput": true}, Progress: progress})
	if err != nil {
		return d, err
	}
	t := r.Throughput
	if t.ServerCPUPerTaskUS == 0 {
		return d, fmt.Errorf("the server's CPU could not be read: run the server on this machine")
	}
	perTask := func(us float64) time.Duration { return time.Duration(us * float64(tasks) * float64(time.Microsecond)) }
	d = newDrain(tasks, time.Duration(t.DrainSeconds*float64(time.Second)),
		perTask(t.ServerCPUPerTaskUS), perTask(t.NodeCPUPerTaskUS))
	if l := t.Limit; l != nil {
		d.LimitPerSec, d.LimitServerCPU = l.BodyPerSec, l.BodyServerCPUPerRun
		d.NamedLimitPerSec, d.NamedServerCPU = l.NamedPerSec, l.NamedServerCPUPerRun
	}
	d.Slots = t.Slots
	if s := t.Slots; s != nil {
		fmt.Fprintf(progress, "readpast slots: body %.1f %%, scheduling %.1f %%, after %.1f %%, idle: claim in flight %.1f %%, ends awaiting the finisher %.1f %%, other %.1f %%; %.0f tasks a claim, %.0f ends a finish\n",
			100*s.Body, 100*s.Scheduling, 100*s.After, 100*s.IdleClaiming, 100*s.IdleEndingFull, 100*s.IdleOther, s.TasksPerClaim, s.EndsPerFinish)
	}
	return d, nil
}
