// Command web is ReadPast: the dashboard, the JSON API and this node's workers,
// in one binary. Subcommands: serve (the default), migrate, version, bench.
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
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is main without the process: testable with its own args, env and outputs.
func run(ctx context.Context, args []string, getenv func(string) string, out, errOut io.Writer) int {
	cmd := "serve"
	if len(args) > 0 && (args[0] == "serve" || args[0] == "migrate" || args[0] == "version" || args[0] == "bench") {
		cmd, args = args[0], args[1:]
	}
	if cmd == "bench" {
		return benchCmd(ctx, args, getenv, out, errOut)
	}
	if cmd == "version" {
		fmt.Fprintln(out, "readpast", version)
		return 0
	}
	var sub string
	if cmd == "migrate" {
		sub = "up"
		if len(args) > 0 && (args[0] == "up" || args[0] == "status") {
			sub, args = args[0], args[1:]
		}
	}
	cfg, err := parseFlags("readpast "+cmd, args, getenv, errOut)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(errOut, "readpast:", err)
		return 2
	}
	log := newLogger(errOut, cfg.LogLevel)
	switch cmd {
	case "migrate":
		err = migrate(ctx, cfg, sub, out)
	default:
		err = serve(ctx, cfg, log)
	}
	if err != nil {
		log.Error(cmd+" failed", "err", err)
		return 1
	}
	return 0
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}
