package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/kardianos/service"

	"readpast/internal/dialect"
)

// serviceName names the service: the systemd unit readpast.service, the
// launchd label and the Windows service (and its event log source).
const serviceName = "readpast"

// serviceUsage is `readpast service --help`.
const serviceUsage = `Usage: readpast service install [--user NAME] [serve flags]
       readpast service uninstall|start|stop|status

Installs ReadPast as a Windows service, a systemd unit (Linux) or a launchd
daemon (macOS) that runs "readpast serve" with the flags given to install; the
other actions act on that service. Run them as Administrator or root.
Secrets (a DSN's password, the tokens) are not taken as flags: the service
definition is readable by every local user. Give them in the environment
(docs/INSTALL.md).

  --user NAME   the account the service runs as (Linux: default readpast, a
                system user made if missing; Windows: default LocalSystem, or
                a gMSA or NT SERVICE\readpast; macOS: default root)
`

// serviceCmd is `readpast service install|uninstall|start|stop|status`.
func serviceCmd(_ context.Context, args []string, getenv func(string) string, out, errOut io.Writer) int {
	if len(args) == 0 || isHelp(args[0]) || args[0] == "help" {
		fmt.Fprint(errOut, serviceUsage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	action, rest := args[0], args[1:]
	switch action {
	case "install", "uninstall", "start", "stop", "status":
	default:
		fmt.Fprintf(errOut, "readpast service: %q is not an action: use install, uninstall, start, stop or status\n", action)
		return 2
	}
	if action != "install" && len(rest) > 0 {
		fmt.Fprintf(errOut, "readpast service %s takes no arguments; the flags of serve go to install\n", action)
		return 2
	}
	def := unitDef{}
	if action == "install" {
		var err error
		if def, err = installDef(rest, getenv, errOut); errors.Is(err, flag.ErrHelp) {
			return 0
		} else if err != nil {
			fmt.Fprintln(errOut, "readpast service install:", err)
			return 2
		}
	}
	s, err := newService(def)
	if err != nil {
		fmt.Fprintln(errOut, "readpast service:", err)
		return 1
	}
	switch action {
	case "install":
		if err = prepareInstall(def); err == nil {
			err = s.Install()
		}
	case "uninstall":
		err = s.Uninstall()
	case "start":
		err = s.Start()
	case "stop":
		err = s.Stop()
	case "status":
		var st service.Status
		st, err = s.Status()
		if err == nil || errors.Is(err, service.ErrNotInstalled) {
			fmt.Fprintln(out, statusWord(st, err))
			return 0
		}
	}
	if err != nil {
		fmt.Fprintf(errOut, "readpast service %s (%s): %v (run it as Administrator or root; docs/INSTALL.md)\n", action, s.Platform(), err)
		return 1
	}
	fmt.Fprintf(out, "readpast service %s: done (%s)\n", action, s.Platform())
	return 0
}

func statusWord(st service.Status, err error) string {
	switch {
	case errors.Is(err, service.ErrNotInstalled):
		return "not installed"
	case st == service.StatusRunning:
		return "running"
	case st == service.StatusStopped:
		return "stopped"
	}
	return "unknown"
}

// installDef reads install's flags: --user, and serve's, checked as serve
// checks them, then recorded as given (those set on the command line only).
func installDef(args []string, getenv func(string) string, errOut io.Writer) (unitDef, error) {
	fs, c, err := newFlagSet("readpast service install", getenv, errOut)
	if err != nil {
		return unitDef{}, err
	}
	fs.Usage = func() { fmt.Fprint(errOut, serviceUsage, "\nServe's flags:\n\n"); fs.PrintDefaults() }
	user := fs.String("user", defaultServiceUser(), "the account the service runs as")
	if err := fs.Parse(args); err != nil {
		return unitDef{}, err
	}
	if fs.NArg() > 0 {
		return unitDef{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	recorded := []string{"serve"}
	var secrets []string
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "user":
			return
		case "operator-token", "viewer-token":
			secrets = append(secrets, "--"+f.Name)
		case "dsn", "target-dsn":
			if hasPassword(f.Value.String()) {
				secrets = append(secrets, "--"+f.Name+"'s password")
			}
		case "target":
			// Repeatable: each entry is recorded as given, unless a DSN
			// holds a password (then READPAST_TARGETS or a targets file).
			for _, e := range c.Targets.given {
				if _, dsn, _ := strings.Cut(e, "="); hasPassword(dsn) {
					secrets = append(secrets, "--target's password")
					return
				}
			}
			for _, e := range c.Targets.given {
				recorded = append(recorded, "--target="+e)
			}
			return
		}
		recorded = append(recorded, "--"+f.Name+"="+f.Value.String())
	})
	if len(secrets) > 0 {
		return unitDef{}, fmt.Errorf("%s would be written into the service definition, which every local user can read: give %s in the service's environment instead (READPAST_DSN, READPAST_TARGET_DSN, READPAST_TARGETS, READPAST_OPERATOR_TOKEN, READPAST_VIEWER_TOKEN; docs/INSTALL.md) or, for targets, in a --targets-file only the service's account can read, or log in without a password (Windows or Entra ID login, docs/SQLSERVER.md)",
			strings.Join(secrets, " and "), map[bool]string{true: "it", false: "them"}[len(secrets) == 1])
	}
	if _, _, err := dialect.Parse(c.DSN); err != nil {
		return unitDef{}, fmt.Errorf("--dsn: %w", err)
	}
	if c.DSN == "" && getenv("READPAST_DSN") == "" && runtime.GOOS != "linux" {
		// A service's working directory is not a place for the store
		// (C:\Windows\System32 on Windows): the default file goes to the
		// platform's place for service data. On Linux the unit's state
		// directory is the working directory.
		recorded = append(recorded, "--dsn="+filepath.Join(serviceDataDir(), dialect.DefaultSQLiteFile))
	}
	exe, err := os.Executable()
	if err != nil {
		return unitDef{}, fmt.Errorf("finding this binary's path: %w", err)
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return unitDef{}, fmt.Errorf("finding this binary's path: %w", err)
	}
	return unitDef{Exe: exe, Args: recorded, User: *user, Grace: c.Grace}, nil
}

// hasPassword reports whether a DSN holds a password: user:password@ in a
// URL, or a password parameter.
func hasPassword(dsn string) bool {
	u, err := url.Parse(dsn)
	if err != nil {
		return strings.Contains(strings.ToLower(dsn), "password")
	}
	if _, ok := u.User.Password(); ok {
		return true
	}
	for k := range u.Query() {
		if strings.EqualFold(k, "password") {
			return true
		}
	}
	return false
}

// newService is the service definition for def, on the platform's service
// manager. On Linux it must be systemd: the unit is written as systemdUnit
// renders it.
func newService(def unitDef) (service.Service, error) {
	if runtime.GOOS == "linux" && service.ChosenSystem() != nil && service.ChosenSystem().String() != "linux-systemd" {
		return nil, fmt.Errorf("this machine's init system is %s, and ReadPast installs itself as a systemd unit only: run readpast serve under your init system, with SIGTERM to stop it (docs/INSTALL.md)", service.ChosenSystem())
	}
	grace := def.Grace
	if grace == 0 {
		grace = 30 * time.Second
	}
	cfg := &service.Config{
		Name:        serviceName,
		DisplayName: "ReadPast",
		Description: "ReadPast: durable SQL task queue, scheduler and dashboard",
		Executable:  def.Exe,
		Arguments:   def.Args,
		UserName:    def.User,
		Option: service.KeyValue{
			// Windows: start at boot, after the network; restart on a failure.
			"StartType":              "automatic",
			"DelayedAutoStart":       true,
			"OnFailure":              "restart",
			"OnFailureDelayDuration": "10s",
			"OnFailureResetPeriod":   86400,
			// systemd: the unit as systemdUnit writes it.
			"SystemdScript": templateLiteral(systemdUnit(def)),
			// launchd: start at boot, restart when it exits.
			"RunAtLoad": true,
			"KeepAlive": true,
		},
	}
	if runtime.GOOS == "darwin" {
		cfg.WorkingDirectory = serviceDataDir()
	}
	return service.New(&program{parent: context.Background()}, cfg)
}

// prepareInstall makes what the service needs before it is installed: the
// data directory (Windows, macOS) and, on Linux, the dedicated system user.
func prepareInstall(def unitDef) error {
	if runtime.GOOS == "linux" {
		return ensureSystemUser(def.User)
	}
	if err := os.MkdirAll(serviceDataDir(), 0o750); err != nil {
		return fmt.Errorf("making the data directory %s: %w", serviceDataDir(), err)
	}
	return nil
}
