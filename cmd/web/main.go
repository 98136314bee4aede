// Command web is ReadPast: the dashboard, the JSON API and this node's workers,
// in one binary. Build it with `go build -o readpast ./cmd/web` (the repository
// has a web/ directory, so a plain `go build ./cmd/web` cannot write ./web).
// Its subcommands are listed in commands; `readpast --help` prints them.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// command is one subcommand: its name, the arguments it takes before its
// flags, what it does, and how it runs (with its own args, env and outputs,
// returning the exit code).
type command struct {
	name, args, summary string
	run                 func(ctx context.Context, args []string, getenv func(string) string, out, errOut io.Writer) int
}

// commands are the subcommands in the order help lists them; the first runs
// when none is named. Adding a subcommand is adding its line here.
func commands() []command {
	return []command{
		{"serve", "", "run the dashboard, the JSON API and this node's workers (the default)", serveCmd},
		{"migrate", "[up|status]", "apply the schema to the store (up, the default), or report its version (status)", migrateCmd},
		{"bench", "", "measure this build on a scratch database (docs/BENCHMARKS.md)", benchCmd},
		{"selftest", "", "prove ReadPast's guarantees on this server, in a scratch database (docs/SQLSERVER.md)", selftestCmd},
		{"import-agent", "", "import SQL Server Agent's jobs from msdb as paused ReadPast jobs, or print them with --dry-run (docs/JOBS.md)", importAgentCmd},
		{"service", "install|uninstall|start|stop|status", "install ReadPast as a Windows service, systemd unit or launchd daemon running serve, or act on it (docs/INSTALL.md)", serviceCmd},
		{"version", "", "print the version, commit and build date", versionCmd},
	}
}

// run is main without the process: testable with its own args, env and outputs.
func run(ctx context.Context, args []string, getenv func(string) string, out, errOut io.Writer) int {
	cmds := commands()
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && isHelp(args[0]) {
			usage(out, cmds)
			return 0
		}
		return cmds[0].run(ctx, args, getenv, out, errOut)
	}
	if args[0] == "help" {
		usage(out, cmds)
		return 0
	}
	for _, c := range cmds {
		if c.name == args[0] {
			return c.run(ctx, args[1:], getenv, out, errOut)
		}
	}
	fmt.Fprintf(errOut, "readpast: %q is not a command\n\n", args[0])
	usage(errOut, cmds)
	return 2
}

func isHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--help":
		return true
	}
	return false
}

// usage lists the subcommands, then the default one's flags.
func usage(w io.Writer, cmds []command) {
	fmt.Fprintln(w, "ReadPast: a durable SQL task queue, its workers and its dashboard, in one binary.")
	fmt.Fprintln(w, "\nUsage: readpast [command] [flags]")
	fmt.Fprintln(w, "\nCommands:")
	width := 0
	for _, c := range cmds {
		width = max(width, len(c.name))
	}
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-*s %s\n", width, c.name, c.summary)
	}
	fmt.Fprintf(w, "\nFlags of %s, each with a READPAST_* environment default (`readpast <command> --help` gives another command's):\n\n", cmds[0].name)
	fs, _, _ := newFlagSet("readpast "+cmds[0].name, func(string) string { return "" }, w)
	fs.PrintDefaults()
}

// withConfig parses the flags of command name (whose usage line shows
// argsUsage before them) and runs fn with the config and a logger: exit code
// 2 for bad flags, 1 when fn fails, 0 for help.
func withConfig(name, argsUsage string, args []string, getenv func(string) string, errOut io.Writer,
	fn func(cfg config, log *slog.Logger) error) int {
	cfg, err := parseFlagsOf(strings.TrimSpace("readpast "+name+" "+argsUsage), ownFlags[name], args, getenv, errOut)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(errOut, "readpast:", err)
		return 2
	}
	log := newLogger(errOut, cfg.LogLevel)
	if err := fn(cfg, log); err != nil {
		log.Error(name+" failed", "err", err)
		return 1
	}
	return 0
}

func newLogger(w io.Writer, level string) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: logLevel(level)}))
}

// logLevel reads --log-level; what does not parse is info.
func logLevel(level string) slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	return l
}
