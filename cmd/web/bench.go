package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"readpast/internal/bench"
	"readpast/internal/queue"
	"readpast/internal/queue/open"
	"readpast/internal/target"
)

// benchParts are the parts --only may name.
var benchParts = []string{"throughput", "latency", "depth", "idle", "backlog", "history", "purge"}

// benchCmd runs `readpast bench`: it measures this build on the store a DSN
// names and prints a table, then the same figures as JSON. Use a scratch
// database: it leaves its bench-* queues behind.
func benchCmd(ctx context.Context, args []string, getenv func(string) string, out, errOut io.Writer) int {
	fs := flag.NewFlagSet("readpast bench", flag.ContinueOnError)
	fs.SetOutput(errOut)
	dsn := fs.String("dsn", getenv("READPAST_DSN"), "store DSN to measure (env READPAST_DSN); use a scratch database")
	tasks := fs.Int("tasks", 200000, "throughput: no-op tasks to drain (River's burn-down uses 200,000)")
	nworkers := fs.Int("workers", 64, "throughput: workers per node (each a target connection while it runs a body)")
	nodes := fs.Int("nodes", 1, "throughput: nodes in this process")
	latTasks := fs.Int("latency-tasks", 200, "latency: tasks enqueued one at a time")
	rate := fs.Float64("latency-rate", 20, "latency: tasks per second")
	depths := fs.String("depths", "1000,100000,1000000", "depth: pending depths to measure claims at")
	idleFor := fs.Duration("idle-for", 10*time.Second, "idle: how long to watch an idle node")
	backlogN := fs.Int("backlog", 1000000, "backlog: tasks of a full group, tasks delayed, and ready tasks of a target the claims do not name, ahead of the ready ones")
	purgeN := fs.Int("purge", 1000000, "purge: finished tasks to purge while claiming")
	historySizes := fs.String("history", "1000,1000000", "history: finished tasks to measure the dashboard at (10M: 10000000; SQLite builds it in tens of minutes)")
	historyRequests := fs.Int("history-requests", 100, "history: timed requests of each kind per size")
	only := fs.String("only", "", "comma-separated parts to run: throughput, latency, depth, idle, backlog, history, purge (default all)")
	cpuProfile := fs.String("cpuprofile", "", "write a Go CPU profile of the whole run to this file (go tool pprof)")
	memProfile := fs.String("memprofile", "", "write a Go allocation profile of the whole run to this file (go tool pprof)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ds, ok := positiveList(*depths)
	if !ok {
		fmt.Fprintf(errOut, "readpast bench: --depths %q: give positive whole numbers separated by commas\n", *depths)
		return 2
	}
	hs, ok := positiveList(*historySizes)
	if !ok {
		fmt.Fprintf(errOut, "readpast bench: --history %q: give positive whole numbers separated by commas\n", *historySizes)
		return 2
	}
	if *historyRequests < 1 {
		fmt.Fprintf(errOut, "readpast bench: --history-requests %d: give at least 1\n", *historyRequests)
		return 2
	}
	parts := map[string]bool{}
	for _, p := range strings.Split(*only, ",") {
		if p = strings.TrimSpace(p); p != "" {
			if !slices.Contains(benchParts, p) {
				fmt.Fprintf(errOut, "readpast bench: --only %q: parts are %s\n", p, strings.Join(benchParts, ", "))
				return 2
			}
			parts[p] = true
		}
	}
	s, err := open.Store(ctx, *dsn, queue.Options{})
	if err != nil {
		fmt.Fprintln(errOut, "readpast bench:", err)
		return 1
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		fmt.Fprintln(errOut, "readpast bench:", err)
		return 1
	}
	tgt, err := target.Open(ctx, *dsn)
	if err != nil {
		fmt.Fprintln(errOut, "readpast bench:", err)
		return 1
	}
	defer tgt.Close()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(errOut, "readpast bench: --cpuprofile:", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(errOut, "readpast bench: --cpuprofile:", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	if *memProfile != "" {
		runtime.MemProfileRate = 64 << 10
		defer func() {
			if err := writeHeapProfile(*memProfile); err != nil {
				fmt.Fprintln(errOut, "readpast bench: --memprofile:", err)
			}
		}()
	}
	r, err := bench.Run(ctx, bench.Config{Store: s, Target: tgt, Dialect: s.Dialect(), DSN: *dsn, Tasks: *tasks, Workers: *nworkers,
		Nodes: *nodes, LatencyTasks: *latTasks, LatencyRate: *rate, Depths: ds, IdleFor: *idleFor, Backlog: *backlogN,
		PurgeHistory: *purgeN, History: hs, HistoryRequests: *historyRequests, Only: parts, Progress: errOut})
	if r != nil {
		r.WriteTable(out)
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		_ = enc.Encode(r)
	}
	if err != nil {
		fmt.Fprintln(errOut, "readpast bench:", err)
		return 1
	}
	return 0
}

// positiveList reads "1000,20000": whole numbers above zero.
func positiveList(s string) ([]int, bool) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, false
		}
		out = append(out, n)
	}
	return out, true
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
