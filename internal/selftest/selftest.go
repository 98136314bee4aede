// Package selftest proves ReadPast's guarantees (SPEC §4–6) on a DBA's own
// server. `readpast selftest --dsn …` makes a scratch database (SQL Server),
// schema (PostgreSQL) or file (SQLite) beside the one the DSN names, runs each
// guarantee as a probe against the production store code on it, reports PASS,
// FAIL or SKIP per guarantee with the evidence, and removes the scratch again.
//
// The probes use the store exactly as a node does, plus a connection of their
// own for what only the server can tell (which rows are locked, the plan a
// claim gets, the deadlocks it counted). Nothing a probe does reaches the
// DSN's own database: every write goes to the scratch.
package selftest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"readpast/internal/dialect"
	"readpast/internal/queue"
	"readpast/internal/queue/open"
)

// Status is a probe's verdict.
type Status string

// The verdicts. Info reports a fact about the server that decides nothing by
// itself.
const (
	Pass Status = "PASS"
	Fail Status = "FAIL"
	Skip Status = "SKIP"
	Info Status = "INFO"
)

// Check is one probe's outcome.
type Check struct {
	Name      string        // short, stable: "claimers never wait: open claim"
	Guarantee string        // what it proves, with its place in the spec
	Status    Status        //
	Evidence  string        // what was measured or seen
	Took      time.Duration //
}

// Config says what to test and how hard.
type Config struct {
	// DSN names the server (and, for SQL Server and PostgreSQL, the database
	// whose server the scratch is made on; for SQLite, the directory of the
	// scratch file).
	DSN string
	// Database, on SQL Server, is an existing empty database to use as the
	// scratch instead of creating one (for a login without CREATE DATABASE);
	// selftest migrates it up and back down, leaving it empty.
	Database string
	// Keep leaves the scratch in place, for a DBA to look at.
	Keep bool
	// Soak is how long the deadlock soak runs (0: 10 s).
	Soak time.Duration
	// Tasks is how many tasks the exactly-once probe drains (0: 2,000).
	Tasks int
	// Progress receives a line as each probe starts; nil discards them.
	Progress io.Writer
	// Logger receives the store's log lines; nil discards them.
	Logger *slog.Logger
}

// Report is what a run found.
type Report struct {
	Dialect dialect.Dialect
	Server  string // the server's own name for its version
	Scratch string // where the probes ran
	Login   string // how it logged in and as whom, as the server reports the principal
	Checks  []Check
}

// Failed reports whether any probe failed.
func (r Report) Failed() bool {
	for _, c := range r.Checks {
		if c.Status == Fail {
			return true
		}
	}
	return false
}

// Write prints the report as a table, then a summary line.
func (r Report) Write(w io.Writer) {
	fmt.Fprintf(w, "ReadPast selftest on %s (%s), scratch %s\nlogin: %s\n\n", r.Dialect, r.Server, r.Scratch, r.Login)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RESULT\tPROBE\tGUARANTEE\tEVIDENCE")
	counts := map[Status]int{}
	for _, c := range r.Checks {
		counts[c.Status]++
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Status, c.Name, c.Guarantee, oneLine(c.Evidence))
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "\n%d passed, %d failed, %d skipped, %d facts\n", counts[Pass], counts[Fail], counts[Skip], counts[Info])
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// env is what every probe works with: two stores on the scratch (claimers A
// and B, each with its own connections), a connection of the probes' own,
// and the scratch itself.
type env struct {
	cfg     Config
	dialect dialect.Dialect
	a, b    queue.Store
	sc      *scratch
}

// probe is one guarantee's test; it may report several checks.
type probe struct {
	name string
	run  func(ctx context.Context, e *env) []Check
}

// Run makes the scratch, runs every probe on it and removes it. The error is
// for what kept the run from starting or cleaning up (a bad DSN, no right to
// create the scratch); a guarantee that does not hold is a FAIL in the report.
func Run(ctx context.Context, cfg Config) (rep Report, err error) {
	if cfg.Soak <= 0 {
		cfg.Soak = 10 * time.Second
	}
	if cfg.Tasks <= 0 {
		cfg.Tasks = 2000
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d, _, err := dialect.Parse(cfg.DSN)
	if err != nil {
		return rep, err
	}
	rep.Dialect = d
	sc, err := newScratch(ctx, d, cfg)
	if err != nil {
		return rep, err
	}
	rep.Scratch, rep.Server, rep.Login = sc.where, sc.server, sc.login
	defer func() {
		if cfg.Keep {
			fmt.Fprintf(cfg.Progress, "keeping the scratch %s\n", sc.where)
			return
		}
		if cerr := sc.remove(context.WithoutCancel(ctx)); cerr != nil && err == nil {
			err = fmt.Errorf("removing the scratch %s: %w", sc.where, cerr)
		}
	}()
	e := &env{cfg: cfg, dialect: d, sc: sc}
	opts := queue.Options{Logger: log}
	if e.a, err = open.Store(ctx, sc.dsn, opts); err != nil {
		return rep, fmt.Errorf("opening the store on the scratch: %w", err)
	}
	defer e.a.Close()
	if e.b, err = open.Store(ctx, sc.dsn, opts); err != nil {
		return rep, fmt.Errorf("opening a second store on the scratch: %w", err)
	}
	defer e.b.Close()

	schema := probeSchema(ctx, e)
	rep.Checks = append(rep.Checks, schema...)
	ready := schema[len(schema)-1].Status == Pass
	for _, p := range probes() {
		if !ready {
			rep.Checks = append(rep.Checks, Check{Name: p.name, Status: Skip, Evidence: "the schema could not be created on the scratch"})
			continue
		}
		fmt.Fprintf(cfg.Progress, "probing: %s\n", p.name)
		pctx, cancel := context.WithTimeout(ctx, probeTimeout(cfg))
		rep.Checks = append(rep.Checks, p.run(pctx, e)...)
		cancel()
		if ctx.Err() != nil {
			return rep, ctx.Err()
		}
	}
	if ready {
		rep.Checks = append(rep.Checks, probeMigrateDown(ctx, e))
	}
	return rep, nil
}

// probeTimeout bounds one probe: generous, so that a slow server is reported
// slow, not stuck.
func probeTimeout(cfg Config) time.Duration { return 3*time.Minute + cfg.Soak }

// probes are the guarantees, in the order they are reported.
func probes() []probe {
	return []probe{
		{"round trip", probeRoundTrip},
		{"exactly once", probeExactlyOnce},
		{"claimers never wait", probeNonBlocking},
		{"lock footprint", probeLockFootprint},
		{"groups and chains", probeGroupsAndChains},
		{"claim plan", probeClaimPlan},
		{"deadlock soak", probeSoak},
		{"sessions after bodies", probeSessions},
		{"server facts", probeFacts},
	}
}

// timed runs fn and fills the check's Took.
func timed(c Check, fn func(c *Check)) Check {
	start := time.Now()
	fn(&c)
	c.Took = time.Since(start)
	return c
}

// failed turns err into a failed check's evidence.
func (c *Check) failed(what string, err error) {
	c.Status = Fail
	c.Evidence = what + ": " + err.Error()
}

// passed fills a passing check's evidence.
func (c *Check) passed(format string, args ...any) {
	c.Status = Pass
	c.Evidence = fmt.Sprintf(format, args...)
}
