package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/queue/open"
	"readpast/internal/testenv"
)

// The unit install writes is one systemd accepts (systemd-analyze verify),
// with the drain on SIGTERM, a restart on failure only, a dedicated user and
// serve's flags as given, quoted so systemd reads each back whole.
func TestSystemdUnitVerifies(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	require.NoError(t, err)
	def := unitDef{Exe: exe, User: "readpast", Grace: 40 * time.Second,
		Args: []string{"serve", "--listen=0.0.0.0:8080", "--node-id=db host 1", `--dsn=C:\data\rp "1".db`, "--poll=100%", "--workers=$8"}}
	unit := systemdUnit(def)
	for _, want := range []string{
		"ExecStart=" + exe + ` serve --listen=0.0.0.0:8080 "--node-id=db host 1" "--dsn=C:\\data\\rp \"1\".db" --poll=100%% --workers=$$8`,
		"User=readpast\n", "Group=readpast\n", "Restart=on-failure\n", "KillSignal=SIGTERM\n", "TimeoutStopSec=60\n",
		"EnvironmentFile=-/etc/readpast/readpast.env\n", "StateDirectory=readpast\n", "WantedBy=multi-user.target\n",
	} {
		require.Contains(t, unit, want)
	}

	// kardianos/service renders the unit as a template: it must come out as written.
	tmpl, err := template.New("unit").Parse(templateLiteral(unit + "a {{ literal }} b\n"))
	require.NoError(t, err)
	var rendered bytes.Buffer
	require.NoError(t, tmpl.Execute(&rendered, nil))
	require.Equal(t, unit+"a {{ literal }} b\n", rendered.String())

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed (Debian package systemd): the unit's text was checked, not systemd's reading of it")
	}
	file := filepath.Join(t.TempDir(), "readpast.service")
	require.NoError(t, os.WriteFile(file, []byte(unit), 0o644))
	out, err := exec.Command(analyze, "verify", file).CombinedOutput()
	require.NoError(t, err, "systemd-analyze verify: %s\n%s", out, unit)
	require.Empty(t, strings.TrimSpace(string(out)), "systemd has no complaint about the unit:\n%s", unit)
}

// install records serve's flags as given (checked as serve checks them) and
// refuses secrets, which the service definition would show every local user.
func TestServiceInstallRecordsFlagsAndRefusesSecrets(t *testing.T) {
	t.Parallel()
	def, err := installDef([]string{"--listen", "0.0.0.0:9000", "--workers", "8", "--user", "svc-rp",
		"--dsn", "sqlserver://db.corp.example?database=rp&authenticator=krb5"}, envOf(nil), io.Discard)
	require.NoError(t, err)
	require.Equal(t, []string{"serve", "--dsn=sqlserver://db.corp.example?database=rp&authenticator=krb5", "--listen=0.0.0.0:9000", "--workers=8"}, def.Args)
	require.Equal(t, "svc-rp", def.User)
	require.Equal(t, 30*time.Second, def.Grace)
	require.True(t, filepath.IsAbs(def.Exe))

	def, err = installDef(nil, envOf(nil), io.Discard)
	require.NoError(t, err)
	require.Equal(t, "readpast", def.User, "Linux's default is the dedicated user")

	def, err = installDef([]string{"--target", "lite1;tags:a=/var/lib/readpast/l1.db", "--target", "pg1=postgres://rp@db/rp"}, envOf(nil), io.Discard)
	require.NoError(t, err)
	require.Equal(t, []string{"serve", "--target=lite1;tags:a=/var/lib/readpast/l1.db", "--target=pg1=postgres://rp@db/rp"}, def.Args,
		"every --target is recorded, each as given")

	for _, args := range [][]string{
		{"--operator-token", "0123456789abcdef0123"},
		{"--dsn", "postgres://rp:s3cret@db/rp"},
		{"--target-dsn", "sqlserver://db?user+id=rp&password=s3cret"},
		{"--target", "db1;tags:prod=postgres://rp:s3cret@db/rp"},
	} {
		_, err := installDef(args, envOf(nil), io.Discard)
		require.ErrorContains(t, err, "environment", "%v", args)
		require.NotContains(t, err.Error(), "s3cret", "the refusal never repeats the secret")
		require.NotContains(t, err.Error(), "0123456789abcdef", "the refusal never repeats the secret")
	}
	_, err = installDef([]string{"--workers", "many"}, envOf(nil), io.Discard)
	require.Error(t, err, "a flag serve would refuse is refused at install")
	_, err = installDef([]string{"--dsn", "mysql://db"}, envOf(nil), io.Discard)
	require.ErrorContains(t, err, "--dsn")
}

// The path the Windows service manager drives, run on Linux: Start returns
// while serve runs; Stop drains the running task to its end, as SIGTERM does,
// and returns once serve has; a second Stop is no error.
func TestServiceProgramStartAndDrainingStop(t *testing.T) {
	t.Parallel()
	dsn := filepath.Join(t.TempDir(), "readpast.db")
	addr := freeAddr(t)
	cfg, err := parseFlags("t", []string{"--dsn", dsn, "--listen", addr, "--poll", "50ms", "--grace", "20s"}, envOf(nil), io.Discard)
	require.NoError(t, err)
	logs := &syncBuffer{}
	exited := make(chan error, 1)
	p := &program{parent: context.Background(), serve: func(ctx context.Context) error { return serve(ctx, cfg, newLogger(logs, "info")) },
		exited: func(err error) { exited <- err }}
	require.NoError(t, p.Start(nil))
	require.Error(t, p.Start(nil), "a program runs once at a time")
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "url=http://"+addr) }, 20*time.Second, 20*time.Millisecond, "logs:\n%s", logs)

	s, err := open.Store(context.Background(), dsn, queue.Options{})
	require.NoError(t, err)
	defer s.Close()
	ids, err := s.Enqueue(context.Background(), []queue.NewTask{{Body: testenv.SleepBody(t, testenv.SQLite, 1500*time.Millisecond)}})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		task, err := s.Get(context.Background(), ids[0].ID)
		return err == nil && task.State == queue.StateRunning
	}, 20*time.Second, 20*time.Millisecond, "the task starts")

	require.NoError(t, p.Stop(nil), "logs:\n%s", logs)
	task, err := s.Get(context.Background(), ids[0].ID)
	require.NoError(t, err)
	require.Equal(t, queue.StateSucceeded, task.State, "Stop drains: the running task finishes before it returns")
	require.Contains(t, logs.String(), "node stopped")
	require.NoError(t, p.Stop(nil), "stopping twice is no error")
	select {
	case err := <-exited:
		t.Fatalf("exited is for a serve that ends by itself, not a requested stop: %v", err)
	default:
	}
}

// A serve that ends by itself (here: its port is taken) is reported, so the
// service ends with a failure its manager restarts.
func TestServiceProgramReportsServeEndingByItself(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	cfg, err := parseFlags("t", []string{"--dsn", filepath.Join(t.TempDir(), "readpast.db"), "--listen", ln.Addr().String()}, envOf(nil), io.Discard)
	require.NoError(t, err)
	exited := make(chan error, 1)
	p := &program{parent: context.Background(), serve: func(ctx context.Context) error { return serve(ctx, cfg, newLogger(io.Discard, "info")) },
		exited: func(err error) { exited <- err }}
	require.NoError(t, p.Start(nil))
	select {
	case err := <-exited:
		require.ErrorContains(t, err, "listening on")
	case <-time.After(30 * time.Second):
		t.Fatal("a serve that failed was not reported")
	}
	require.ErrorContains(t, p.Stop(nil), "listening on", "Stop returns serve's error")
}

// `readpast service` without an action says how to use it; an unknown action
// is refused.
func TestServiceUsage(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	require.Equal(t, 2, run(context.Background(), []string{"service"}, envOf(nil), &out, &out))
	require.Contains(t, out.String(), "readpast service install")
	out.Reset()
	require.Equal(t, 2, run(context.Background(), []string{"service", "stop", "--now"}, envOf(nil), &out, &out))
	require.Contains(t, out.String(), "takes no arguments")
	out.Reset()
	require.Equal(t, 2, run(context.Background(), []string{"service", "restart"}, envOf(nil), &out, &out))
	require.Contains(t, out.String(), "not an action")
}

// lines is a service.Logger that keeps what it is given, by event type.
type lines struct{ info, warning, errs []string }

func (l *lines) Info(v ...any) error    { l.info = append(l.info, fmt.Sprint(v...)); return nil }
func (l *lines) Warning(v ...any) error { l.warning = append(l.warning, fmt.Sprint(v...)); return nil }
func (l *lines) Error(v ...any) error   { l.errs = append(l.errs, fmt.Sprint(v...)); return nil }
func (l *lines) Infof(f string, v ...any) error {
	return l.Info(fmt.Sprintf(f, v...))
}
func (l *lines) Warningf(f string, v ...any) error {
	return l.Warning(fmt.Sprintf(f, v...))
}
func (l *lines) Errorf(f string, v ...any) error {
	return l.Error(fmt.Sprintf(f, v...))
}

// Under the Windows service manager each log line is one event of its
// level's type, below the level none.
func TestEventLogHandler(t *testing.T) {
	t.Parallel()
	out := &lines{}
	log := slog.New(newEventLogHandler(out, slog.LevelInfo)).With("node", "n1")
	log.Debug("hidden")
	log.Info("serving", "url", "http://127.0.0.1:8080")
	log.Warn("slow")
	log.Error("failed", "err", "boom")
	require.Len(t, out.info, 1)
	require.Contains(t, out.info[0], `msg=serving node=n1 url=http://127.0.0.1:8080`)
	require.NotContains(t, out.info[0], "\n")
	require.Len(t, out.warning, 1)
	require.Len(t, out.errs, 1)
	require.Contains(t, out.errs[0], "err=boom")
}
