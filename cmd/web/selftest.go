package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"readpast/internal/selftest"
)

// selftestCmd runs `readpast selftest`: the guarantees of SPEC §4–6 as probes
// on a scratch database, schema or file beside the store the DSN names, a
// table of PASS, FAIL and SKIP with the evidence, and exit status 1 on any
// FAIL (2 for bad flags, 3 when the run itself could not be made).
func selftestCmd(ctx context.Context, args []string, getenv func(string) string, out, errOut io.Writer) int {
	fs := flag.NewFlagSet("readpast selftest", flag.ContinueOnError)
	fs.SetOutput(errOut)
	dsn := fs.String("dsn", getenv("READPAST_DSN"), "the server to test (env READPAST_DSN): selftest works on a scratch database (SQL Server), schema (PostgreSQL) or file (SQLite) of its own beside it")
	database := fs.String("database", "", "SQL Server: an existing empty database to use as the scratch, for a login without CREATE DATABASE (left empty again)")
	keep := fs.Bool("keep", false, "keep the scratch afterwards, to look at")
	soak := fs.Duration("soak", 10*time.Second, "how long the deadlock soak runs every writer at once")
	tasks := fs.Int("tasks", 2000, "tasks the exactly-once probe drains")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(errOut, "readpast selftest: unexpected argument %q: give the server with --dsn\n", fs.Arg(0))
		return 2
	}
	rep, err := selftest.Run(ctx, selftest.Config{DSN: *dsn, Database: *database, Keep: *keep, Soak: *soak,
		Tasks: *tasks, Progress: errOut, Logger: newLogger(errOut, "warn")})
	if len(rep.Checks) > 0 {
		rep.Write(out)
	}
	if err != nil {
		fmt.Fprintln(errOut, "readpast selftest:", err)
		return 3
	}
	if rep.Failed() {
		return 1
	}
	return 0
}
