// Command riverbench compares ReadPast with River on one PostgreSQL server, in
// one run (docs/benchmarks/river.md). Each round drains the
// same number of tasks four ways, each on a scratch database created for it:
//
//   - readpast: `readpast bench --only throughput`: one node, --workers workers,
//     every task runs --body on the target (the same database);
//   - river: River's burn-down with `river bench`'s settings, jobs that do
//     nothing;
//   - river-sql: the same, with each job running --body on a pool of --workers
//     connections, as a DBA's River worker that runs a task's SQL would;
//   - river-reset: the same, with each job running --body through ReadPast's
//     executor on --workers connections: River's queue doing the body work
//     ReadPast's workers do, session reset (DISCARD ALL) included.
//
// For each it reports tasks per second and the CPU time per task of the
// database server (every process of it, from /proc: run it on the server's
// machine) and of this process, then ReadPast's ratios to each River mode,
// taken within each round. The order of the four rotates from round to round.
// It is a separate module: River is not a dependency of ReadPast.
//
//	go run . --server-url postgres://…/postgres --tasks 200000 --rounds 3
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"

	"readpast/internal/bench"
)

type config struct {
	serverURL    string
	tasks        int
	rounds       int
	workers      int
	riverWorkers int
	body         string
	timeout      time.Duration
}

func main() {
	var c config
	flag.StringVar(&c.serverURL, "server-url", "", "PostgreSQL URL of a database on the server; scratch databases are created beside it and dropped")
	flag.IntVar(&c.tasks, "tasks", 200000, "tasks (jobs) to drain per system and round")
	flag.IntVar(&c.rounds, "rounds", 3, "rounds; ratios are taken within a round")
	flag.IntVar(&c.workers, "workers", 64, "ReadPast's workers, and the target connections of River's SQL mode")
	flag.IntVar(&c.riverWorkers, "river-workers", 2000, "River's MaxWorkers (river bench uses 2,000)")
	flag.StringVar(&c.body, "body", "SELECT 1", "the SQL River's SQL mode runs per job: readpast bench's task body")
	flag.DurationVar(&c.timeout, "timeout", 30*time.Minute, "give up after this long")
	flag.Parse()
	if c.serverURL == "" || c.tasks < 1 || c.rounds < 1 || c.workers < 1 || c.riverWorkers < 1 {
		fmt.Fprintln(os.Stderr, "riverbench: --server-url is required; --tasks, --rounds, --workers and --river-workers must be positive")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if err := run(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "riverbench:", err)
		os.Exit(1)
	}
}

// drain is one system's figures in one round.
type drain struct {
	PerSec            float64 `json:"tasks_per_sec"`
	Seconds           float64 `json:"seconds"`
	ServerCPUPerTask  float64 `json:"server_cpu_us_per_task"`
	ProcessCPUPerTask float64 `json:"process_cpu_us_per_task"`
	// ReadPast's only: what `bench` measures of the target beside the drain,
	// the body and its session reset on as many connections with no queue
	// (pgbench's `SELECT 1; DISCARD ALL`), and the same with the session
	// marked per task as the executor marks it; and where the worker slots'
	// time went while draining.
	LimitPerSec      float64          `json:"body_and_reset_limit_per_sec,omitempty"`
	LimitServerCPU   float64          `json:"body_and_reset_server_cpu_us,omitempty"`
	NamedLimitPerSec float64          `json:"named_body_and_reset_limit_per_sec,omitempty"`
	NamedServerCPU   float64          `json:"named_body_and_reset_server_cpu_us,omitempty"`
	Slots            *bench.SlotTimes `json:"slots,omitempty"`
}

func newDrain(n int, took, server, process time.Duration) drain {
	us := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(n) }
	return drain{PerSec: float64(n) / took.Seconds(), Seconds: took.Seconds(), ServerCPUPerTask: us(server), ProcessCPUPerTask: us(process)}
}

var systems = []string{"readpast", "river", "river-sql", "river-reset"}

func run(ctx context.Context, c config) error {
	rounds := make([]map[string]drain, c.rounds)
	for i := range rounds {
		rounds[i] = map[string]drain{}
		for j := range systems {
			sys := systems[(i+j)%len(systems)]
			d, err := runOne(ctx, c, sys)
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", i+1, sys, err)
			}
			rounds[i][sys] = d
			fmt.Fprintf(os.Stderr, "round %d %-11s %8.0f tasks/s  server %6.1f µs/task  process %6.1f µs/task\n",
				i+1, sys, d.PerSec, d.ServerCPUPerTask, d.ProcessCPUPerTask)
			if d.LimitPerSec > 0 {
				fmt.Fprintf(os.Stderr, "        limit, body and reset, no queue %8.0f /s (server %.1f µs each), marked per task %8.0f /s (server %.1f µs each)\n",
					d.LimitPerSec, d.LimitServerCPU, d.NamedLimitPerSec, d.NamedServerCPU)
			}
		}
	}
	report(c, rounds)
	return nil
}

// runOne drains c.tasks with one system on a database of its own, created
// for the run and dropped after it.
func runOne(ctx context.Context, c config, sys string) (drain, error) {
	name := "bench_" + strings.ReplaceAll(sys, "-", "_")
	dbURL, err := scratchDatabase(ctx, c.serverURL, name)
	if err != nil {
		return drain{}, err
	}
	defer dropDatabase(c.serverURL, name)
	switch sys {
	case "readpast":
		return readpastRun(ctx, dbURL, c.tasks, c.workers, os.Stderr)
	case "river":
		return riverRun(ctx, dbURL, c.tasks, c.riverWorkers, 0, noBody, "")
	case "river-reset":
		return riverRun(ctx, dbURL, c.tasks, c.riverWorkers, c.workers, executorBody, c.body)
	default:
		return riverRun(ctx, dbURL, c.tasks, c.riverWorkers, c.workers, plainBody, c.body)
	}
}

// scratchDatabase creates an empty database name on the server and returns its URL.
func scratchDatabase(ctx context.Context, serverURL, name string) (string, error) {
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	for _, q := range []string{"DROP DATABASE IF EXISTS " + name, "CREATE DATABASE " + name} {
		if _, err := conn.Exec(ctx, q); err != nil {
			return "", fmt.Errorf("%s: %w", q, err)
		}
	}
	u, err := url.Parse(serverURL)
	if err != nil {
		return "", fmt.Errorf("--server-url: %w", err)
	}
	u.Path = "/" + name
	return u.String(), nil
}

// withPoolSize returns dbURL with its connection pool capped at n
// (pool_max_conns, read by pgxpool and so by ReadPast's target).
func withPoolSize(dbURL string, n int) string {
	u, err := url.Parse(dbURL)
	if err != nil {
		return dbURL // scratchDatabase built it; it parses
	}
	q := u.Query()
	q.Set("pool_max_conns", strconv.Itoa(n))
	u.RawQuery = q.Encode()
	return u.String()
}

func dropDatabase(serverURL, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if conn, err := pgx.Connect(ctx, serverURL); err == nil {
		_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		_ = conn.Close(ctx)
	}
}

// report prints each system's median and range over the rounds, then
// ReadPast's ratios to each River mode, each taken within one round.
func report(c config, rounds []map[string]drain) {
	tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "%d rounds of %d tasks; ReadPast %d workers; River %d workers, SQL modes on %d connections; body %q\n",
		len(rounds), c.tasks, c.workers, c.riverWorkers, c.workers, c.body)
	fmt.Fprintln(tw, "system\ttasks/s median (range)\tserver CPU µs/task\tprocess CPU µs/task")
	pick := func(sys string, f func(drain) float64) []float64 {
		var xs []float64
		for _, r := range rounds {
			xs = append(xs, f(r[sys]))
		}
		return xs
	}
	for _, sys := range systems {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", sys, spread(pick(sys, func(d drain) float64 { return d.PerSec }), "%.0f"),
			spread(pick(sys, func(d drain) float64 { return d.ServerCPUPerTask }), "%.1f"),
			spread(pick(sys, func(d drain) float64 { return d.ProcessCPUPerTask }), "%.1f"))
	}
	ratio := func(other string, f func(drain) float64) []float64 {
		var xs []float64
		for _, r := range rounds {
			xs = append(xs, f(r["readpast"])/f(r[other]))
		}
		return xs
	}
	perSec := func(d drain) float64 { return d.PerSec }
	server := func(d drain) float64 { return d.ServerCPUPerTask }
	fmt.Fprintln(tw, "ReadPast / River\tthroughput median (range)\tserver CPU per task median (range)")
	for _, other := range systems[1:] {
		fmt.Fprintf(tw, "vs %s\t%s\t%s\n", other, spread(ratio(other, perSec), "%.2f×"), spread(ratio(other, server), "%.2f×"))
	}
	// The limit is measured by the same run as ReadPast's drain, right after it.
	of := func(f func(drain) float64) []float64 {
		var xs []float64
		for _, r := range rounds {
			xs = append(xs, r["readpast"].PerSec/f(r["readpast"]))
		}
		return xs
	}
	fmt.Fprintf(tw, "vs body and reset, no queue\t%s\t(its server CPU %s µs a body)\n",
		spread(of(func(d drain) float64 { return d.LimitPerSec }), "%.2f×"),
		spread(pick("readpast", func(d drain) float64 { return d.LimitServerCPU }), "%.1f"))
	fmt.Fprintf(tw, "vs the same, marked per task\t%s\t(its server CPU %s µs a body)\n",
		spread(of(func(d drain) float64 { return d.NamedLimitPerSec }), "%.2f×"),
		spread(pick("readpast", func(d drain) float64 { return d.NamedServerCPU }), "%.1f"))
	tw.Flush()
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	_ = enc.Encode(map[string]any{"tasks": c.tasks, "workers": c.workers, "river_workers": c.riverWorkers, "body": c.body, "rounds": rounds})
}

// spread formats the median and, over several values, the range.
func spread(xs []float64, format string) string {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	if len(s) == 1 {
		return fmt.Sprintf(format, med)
	}
	return fmt.Sprintf(format+" ("+format+"–"+format+")", med, s[0], s[len(s)-1])
}
