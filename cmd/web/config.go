package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"readpast/internal/dialect"
	"readpast/internal/target"
	"strconv"
	"time"
)

// config is everything the binary is told, from flags with READPAST_* env defaults.
type config struct {
	DSN           string
	TargetDSN     string
	Listen        string
	NodeID        string
	Workers       int
	Poll          time.Duration
	Lease         time.Duration
	Grace         time.Duration
	LogRetention  time.Duration
	TaskRetention time.Duration
	MaxBodyBytes  int
	OperatorToken string
	ViewerToken   string
	LogLevel      string
	// Targets are the named targets (config_targets.go); TargetSpecs what
	// they parsed to.
	Targets      targetFlags
	TargetSpecs  []target.Spec
	AlertsConfig string
}

// ownFlags are the flags of the commands that take fewer than serve; a
// command not listed takes them all. Its --help lists only these, and any
// other flag is refused rather than silently ignored.
var ownFlags = map[string][]string{
	"migrate": {"dsn", "max-body", "log-level"},
}

// parseFlags reads args with defaults from getenv (asynqmon's testable
// pattern). prog is the usage line's command, e.g. "readpast serve".
func parseFlags(prog string, args []string, getenv func(string) string, errOut io.Writer) (config, error) {
	return parseFlagsOf(prog, nil, args, getenv, errOut)
}

// parseFlagsOf is parseFlags for a command that takes only the flags named
// (nil: every flag).
func parseFlagsOf(prog string, names []string, args []string, getenv func(string) string, errOut io.Writer) (config, error) {
	fs, c, err := newFlagSet(prog, getenv, errOut)
	if err != nil {
		return *c, err
	}
	if names != nil {
		fs = onlyFlags(fs, names)
	}
	if err := fs.Parse(args); err != nil {
		return *c, err
	}
	if fs.NArg() > 0 {
		return *c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err := c.validate(); err != nil {
		return *c, err
	}
	if names == nil || contains(names, "target") {
		specs, err := c.Targets.specs()
		if err != nil {
			return *c, err
		}
		c.TargetSpecs = specs
	}
	return *c, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// newFlagSet defines the flags, their defaults read from getenv; the error
// names the environment variables that do not parse.
func newFlagSet(prog string, getenv func(string) string, w io.Writer) (*flag.FlagSet, *config, error) {
	c := &config{}
	fs := flag.NewFlagSet(prog, flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: %s [flags]\n\nFlags, each with a READPAST_* environment default:\n\n", prog)
		fs.PrintDefaults()
	}
	env := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	var bad []error
	dur := func(name, def string) time.Duration {
		d, err := time.ParseDuration(env(name, def))
		if err != nil {
			bad = append(bad, fmt.Errorf("%s: %q is not a duration (e.g. 30s, 5m, 720h)", name, env(name, def)))
		}
		return d
	}
	num := func(name, def string) int {
		n, err := strconv.Atoi(env(name, def))
		if err != nil {
			bad = append(bad, fmt.Errorf("%s: %q is not a whole number", name, env(name, def)))
		}
		return n
	}
	fs.StringVar(&c.DSN, "dsn", env("READPAST_DSN", ""), "store DSN: sqlserver://…, postgres://…, sqlite://file or a file path (env READPAST_DSN; default the SQLite file readpast.db)")
	fs.StringVar(&c.TargetDSN, "target-dsn", env("READPAST_TARGET_DSN", ""), "where task bodies run (env READPAST_TARGET_DSN; default the store)")
	fs.StringVar(&c.Listen, "listen", env("READPAST_LISTEN", "127.0.0.1:8080"), "dashboard address (env READPAST_LISTEN)")
	fs.StringVar(&c.NodeID, "node-id", env("READPAST_NODE_ID", ""), "this node's name (env READPAST_NODE_ID; default host-pid)")
	fs.IntVar(&c.Workers, "workers", num("READPAST_WORKERS", "4"), "workers per queue on this node when the queue sets none; 0 runs none, as a pause does (env READPAST_WORKERS)")
	fs.DurationVar(&c.Poll, "poll", dur("READPAST_POLL", "1s"), "idle poll interval (env READPAST_POLL)")
	fs.DurationVar(&c.Lease, "lease", dur("READPAST_LEASE", "30s"), "task lease; heartbeats every third of it (env READPAST_LEASE)")
	fs.DurationVar(&c.Grace, "grace", dur("READPAST_GRACE", "30s"), "how long a stop waits for running tasks (env READPAST_GRACE)")
	fs.DurationVar(&c.LogRetention, "log-retention", dur("READPAST_LOG_RETENTION", "720h"), "keep execution-log rows this long; 0 keeps them (env READPAST_LOG_RETENTION)")
	fs.DurationVar(&c.TaskRetention, "task-retention", dur("READPAST_TASK_RETENTION", "720h"), "keep finished tasks this long; 0 keeps them (env READPAST_TASK_RETENTION)")
	fs.IntVar(&c.MaxBodyBytes, "max-body", num("READPAST_MAX_BODY", "1048576"), "largest task body in bytes (env READPAST_MAX_BODY)")
	fs.StringVar(&c.OperatorToken, "operator-token", env("READPAST_OPERATOR_TOKEN", ""), "secret for the operator role (env READPAST_OPERATOR_TOKEN)")
	fs.StringVar(&c.ViewerToken, "viewer-token", env("READPAST_VIEWER_TOKEN", ""), "secret for the read-only viewer role (env READPAST_VIEWER_TOKEN)")
	defineTargetFlags(fs, &c.Targets, env, dur)
	fs.StringVar(&c.AlertsConfig, "alerts-config", env("READPAST_ALERTS_CONFIG", ""), "JSON file of alert operators, channels and rules, readable by this user only (env READPAST_ALERTS_CONFIG; docs/ALERTS.md)")
	fs.StringVar(&c.LogLevel, "log-level", env("READPAST_LOG_LEVEL", "info"), "debug, info, warn or error (env READPAST_LOG_LEVEL)")
	return fs, c, errors.Join(bad...)
}

// onlyFlags is a flag set of prog with only the named flags of all, which
// still fill the same config.
func onlyFlags(all *flag.FlagSet, names []string) *flag.FlagSet {
	fs := flag.NewFlagSet(all.Name(), flag.ContinueOnError)
	fs.SetOutput(all.Output())
	for _, n := range names {
		if f := all.Lookup(n); f != nil {
			fs.Var(f.Value, f.Name, f.Usage)
		}
	}
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: %s [flags]\n\nFlags, each with a READPAST_* environment default:\n\n", fs.Name())
		fs.PrintDefaults()
	}
	return fs
}

// validate checks fields against each other; errors name the flag.
func (c config) validate() error {
	if _, _, err := dialect.Parse(c.DSN); err != nil {
		return fmt.Errorf("--dsn: %w", err)
	}
	if _, _, err := dialect.Parse(c.TargetDSN); c.TargetDSN != "" && err != nil {
		return fmt.Errorf("--target-dsn: %w", err)
	}
	host, _, err := net.SplitHostPort(c.Listen)
	switch {
	case err != nil:
		return fmt.Errorf("--listen %q: %v (use host:port, e.g. 127.0.0.1:8080)", c.Listen, err)
	case c.Workers < 0 || c.Workers > 1000:
		return fmt.Errorf("--workers %d: use 0 to 1000", c.Workers)
	case c.Poll < 10*time.Millisecond:
		return fmt.Errorf("--poll %s: use at least 10ms", c.Poll)
	case c.Lease < time.Second:
		return fmt.Errorf("--lease %s: use at least 1s", c.Lease)
	case c.Grace < 0 || c.LogRetention < 0 || c.TaskRetention < 0:
		return errors.New("--grace, --log-retention and --task-retention cannot be negative")
	case c.MaxBodyBytes < 1024 || c.MaxBodyBytes > 64<<20:
		return fmt.Errorf("--max-body %d: use 1024 to %d bytes", c.MaxBodyBytes, 64<<20)
	case c.OperatorToken != "" && len(c.OperatorToken) < 16, c.ViewerToken != "" && len(c.ViewerToken) < 16:
		return errors.New("--operator-token and --viewer-token must be at least 16 characters")
	case c.OperatorToken != "" && c.OperatorToken == c.ViewerToken:
		return errors.New("--operator-token and --viewer-token must differ")
	case !isLoopback(host) && c.OperatorToken == "":
		// The dashboard executes SQL: never expose it without credentials.
		return fmt.Errorf("--listen %s is not a loopback address: set --operator-token (READPAST_OPERATOR_TOKEN) first, or listen on 127.0.0.1", c.Listen)
	case c.ViewerToken != "" && c.OperatorToken == "":
		return errors.New("--viewer-token is set without --operator-token: nobody could operate; set both (or neither, for local mode on loopback)")
	}
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
