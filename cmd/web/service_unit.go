package main

import (
	"fmt"
	"strings"
	"time"
)

// unitDef is what a service definition records: the binary, the flags of
// serve, the account it runs as, and how long a stop may take.
type unitDef struct {
	Exe   string   // absolute path of the binary
	Args  []string // "serve" and its flags, as given to install
	User  string   // the dedicated account
	Grace time.Duration
}

// systemdUnit is the systemd unit `service install` writes on Linux. It runs
// serve as a dedicated user in a read-only file system, but for its state
// directory (/var/lib/readpast, the working directory, where the default
// SQLite store lives); it restarts serve when it fails, not when it was
// stopped; a stop is SIGTERM, which drains the workers within --grace, and
// systemd waits that long and a little more before it kills. Secrets come from
// the environment file (READPAST_DSN, READPAST_OPERATOR_TOKEN), which only
// root reads, never from the unit, which every local user can read.
func systemdUnit(d unitDef) string {
	var b strings.Builder
	line := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	line("[Unit]")
	line("Description=ReadPast: durable SQL task queue, scheduler and dashboard")
	line("Wants=network-online.target")
	line("After=network-online.target")
	line("")
	line("[Service]")
	line("Type=exec")
	line("User=%s", d.User)
	line("Group=%s", d.User)
	args := make([]string, 0, len(d.Args)+1)
	for _, a := range append([]string{d.Exe}, d.Args...) {
		args = append(args, systemdQuote(a))
	}
	line("ExecStart=%s", strings.Join(args, " "))
	line("EnvironmentFile=-/etc/readpast/readpast.env")
	line("StateDirectory=readpast")
	line("WorkingDirectory=/var/lib/readpast")
	line("Restart=on-failure")
	line("RestartSec=5s")
	line("KillSignal=SIGTERM")
	// The drain, then HTTP's and the store's own shutdown (serve's 10 s).
	line("TimeoutStopSec=%d", int((d.Grace + 20*time.Second).Seconds()))
	line("NoNewPrivileges=yes")
	line("ProtectSystem=strict")
	line("ProtectHome=read-only")
	line("PrivateTmp=yes")
	line("")
	line("[Install]")
	line("WantedBy=multi-user.target")
	return b.String()
}

// systemdQuote writes one ExecStart argument as systemd reads it back: in
// double quotes when it holds a space, quote or backslash (escaped C-style
// within), with % (a specifier) and $ (a variable) doubled in any case.
func systemdQuote(arg string) string {
	arg = strings.NewReplacer("%", "%%", "$", "$$").Replace(arg)
	if arg != "" && !strings.ContainsAny(arg, " \t\"'\\;") {
		return arg
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(arg) + `"`
}

// templateLiteral makes text pass through text/template unchanged:
// kardianos/service renders a custom systemd unit as a template, so a "{{" in
// a flag's value must reach the file as written.
func templateLiteral(text string) string {
	return strings.ReplaceAll(text, "{{", "{{`{{`}}")
}
