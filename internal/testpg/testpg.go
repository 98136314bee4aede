// Package testpg runs a private PostgreSQL server for tests: initdb into a fresh
// temporary directory, listening only on a unix socket in that directory, with one
// fresh database per test.
//
// A test binary shares one server, started on first use:
//
//	func TestMain(m *testing.M) { os.Exit(testpg.Main(m)) }
//
//	func TestX(t *testing.T) {
//		dsn := testpg.Shared(t).NewDatabase(t)
//		...
//	}
//
// A test that stops and starts the server (connection loss) must use a server of
// its own from Start, so that it does not pull the shared one from under other
// tests running in parallel.
//
// When no server binaries are installed, Shared skips the test, or fails it when
// READPAST_REQUIRE_POSTGRES=1 (CI sets it, so a missing install cannot pass as a
// skip).
package testpg

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// RequireEnv names the variable that turns a missing PostgreSQL into a failure.
const RequireEnv = "READPAST_REQUIRE_POSTGRES"

// BinEnv names the variable that points at a directory holding initdb and pg_ctl,
// for installs outside /usr/lib/postgresql/*/bin and PATH.
const BinEnv = "READPAST_PG_BIN"

// ErrNoServer is returned by Start when no PostgreSQL server binaries are found.
var ErrNoServer = errors.New("testpg: PostgreSQL server binaries (initdb, pg_ctl) not found")

// Server is one private PostgreSQL cluster.
type Server struct {
	bin    string // directory of initdb, pg_ctl
	dir    string // temp dir: data/, the socket, the log
	run    runner
	dbSeq  atomic.Int64
	mu     sync.Mutex // serialises Start, Stop and Close
	up     bool
	closed bool
	guard  *exec.Cmd // the watchdog that cleans up if this process dies
}

// Start creates and starts a new server. Close it when done.
func Start() (*Server, error) {
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	run, err := newRunner()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(tempBase(run), "readpast-pg-")
	if err != nil {
		return nil, fmt.Errorf("testpg: creating the server directory: %w", err)
	}
	s := &Server{bin: bin, dir: dir, run: run}
	// The guard watches from the start, so even a run killed during initdb
	// leaves nothing behind.
	s.startGuard()
	if err := s.init(); err != nil {
		s.stopGuard()
		s.removeDir()
		return nil, err
	}
	if err := s.Start(); err != nil {
		s.stopGuard()
		s.removeDir()
		return nil, err
	}
	return s, nil
}

// tempBase is where server directories go. As root the server runs as postgres,
// which must be able to reach the directory, and the socket path must stay under
// the 107-byte limit, so /tmp rather than whatever TMPDIR says.
func tempBase(r runner) string {
	if r.asPostgres {
		return "/tmp"
	}
	return os.TempDir()
}

func (s *Server) dataDir() string { return filepath.Join(s.dir, "data") }
func (s *Server) logFile() string { return filepath.Join(s.dir, "server.log") }

// SocketDir is the directory holding the server's unix socket.
func (s *Server) SocketDir() string { return s.dir }

func (s *Server) init() error {
	if err := s.run.own(s.dir); err != nil {
		return err
	}
	out, err := s.run.command(filepath.Join(s.bin, "initdb"),
		"-D", s.dataDir(), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-instructions").CombinedOutput()
	if err != nil {
		return fmt.Errorf("testpg: initdb: %w\n%s", err, out)
	}
	// Only the unix socket: tests never open a TCP port. max_connections covers
	// suites that run many concurrent claimers across parallel tests.
	conf := fmt.Sprintf(`
listen_addresses = ''
unix_socket_directories = '%s'
max_connections = 300
shared_buffers = 64MB
log_min_messages = warning
log_min_error_statement = panic
`, s.dir)
	f, err := os.OpenFile(filepath.Join(s.dataDir(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("testpg: configuring the server: %w", err)
	}
	_, err = f.WriteString(conf)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("testpg: configuring the server: %w", err)
	}
	return nil
}

// Start starts a stopped server (Start() starts it already); with Stop it lets a
// test cut every connection and bring the server back on the same socket.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("testpg: server is closed")
	}
	if s.up {
		return nil
	}
	out, err := s.run.command(filepath.Join(s.bin, "pg_ctl"),
		"-D", s.dataDir(), "-l", s.logFile(), "-w", "-t", "60", "start").CombinedOutput()
	if err != nil {
		return fmt.Errorf("testpg: pg_ctl start: %w\n%s\n%s", err, out, s.tailLog())
	}
	s.up = true
	return nil
}

// Stop stops the server (fast shutdown: open connections are cut). The data
// stays, so Start brings it back.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopLocked()
}

func (s *Server) stopLocked() error {
	if !s.up {
		return nil
	}
	out, err := s.run.command(filepath.Join(s.bin, "pg_ctl"),
		"-D", s.dataDir(), "-m", "fast", "-w", "-t", "60", "stop").CombinedOutput()
	if err != nil {
		return fmt.Errorf("testpg: pg_ctl stop: %w\n%s", err, out)
	}
	s.up = false
	return nil
}

// Close stops the server and removes its directory. Calling it twice is harmless.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	err := s.stopLocked()
	s.stopGuard()
	if err != nil {
		// Leave the directory: the server may still use it; the log says why.
		return err
	}
	return s.removeDir()
}

func (s *Server) removeDir() error {
	if err := os.RemoveAll(s.dir); err != nil {
		return fmt.Errorf("testpg: removing %s: %w", s.dir, err)
	}
	return nil
}

// startGuard starts a small shell watchdog that stops the server and removes its
// directory if this process dies without calling Close (a test timeout panics
// past every defer; a killed run runs none), so a crashed test run leaves no
// server behind. It has a session of its own, like the server that pg_ctl
// detaches, so that killing the test's process group does not kill the guard.
func (s *Server) startGuard() {
	script := `while kill -0 "$1" 2>/dev/null; do sleep 1; done
pid=$(head -n 1 "$2/postmaster.pid" 2>/dev/null) && kill -QUIT "$pid" 2>/dev/null
sleep 2
rm -rf "$3"`
	cmd := exec.Command("sh", "-c", script, "testpg-guard", strconv.Itoa(os.Getpid()), s.dataDir(), s.dir)
	cmd.SysProcAttr = ownSession()
	if err := cmd.Start(); err == nil {
		s.guard = cmd
	}
}

// stopGuard ends the watchdog once this process has cleaned up itself.
func (s *Server) stopGuard() {
	if s.guard != nil && s.guard.Process != nil {
		_ = s.guard.Process.Kill()
		_ = s.guard.Wait()
		s.guard = nil
	}
}

func (s *Server) tailLog() string {
	b, err := os.ReadFile(s.logFile())
	if err != nil {
		return ""
	}
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// Tool returns the path of one of the server's client programs (pg_dump,
// psql), from the same installation as the server.
func (s *Server) Tool(name string) string { return filepath.Join(s.bin, name) }

// DSN returns a pgx connection string for database db on this server.
func (s *Server) DSN(db string) string {
	return fmt.Sprintf("postgres://postgres@/%s?host=%s&sslmode=disable", db, s.dir)
}

// NewDatabase creates an empty database for t and returns its DSN. The database
// is dropped when t ends, after the test's own cleanups (which close its pools).
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t%d_%d", os.Getpid(), s.dbSeq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.admin(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("testpg: creating database for %s: %v", t.Name(), err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// FORCE: a test that failed half-way may leave connections open.
		if err := s.admin(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("testpg: dropping database %s: %v", name, err)
		}
	})
	return s.DSN(name)
}

func (s *Server) admin(ctx context.Context, stmt string) error {
	conn, err := pgx.Connect(ctx, s.DSN("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, stmt)
	return err
}

// findBin returns the directory holding initdb and pg_ctl: READPAST_PG_BIN, the
// newest /usr/lib/postgresql/*/bin (Debian), or PATH.
func findBin() (string, error) {
	has := func(dir string) bool {
		for _, b := range []string{"initdb", "pg_ctl"} {
			if st, err := os.Stat(filepath.Join(dir, b)); err != nil || st.IsDir() {
				return false
			}
		}
		return true
	}
	if dir := os.Getenv(BinEnv); dir != "" {
		if has(dir) {
			return dir, nil
		}
		return "", fmt.Errorf("%w in %s=%s", ErrNoServer, BinEnv, dir)
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return majorOf(dirs[i]) > majorOf(dirs[j]) })
	for _, d := range dirs {
		if has(d) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("pg_ctl"); err == nil && has(filepath.Dir(p)) {
		return filepath.Dir(p), nil
	}
	return "", fmt.Errorf("%w (looked in $%s, /usr/lib/postgresql/*/bin and PATH; install the postgresql package)", ErrNoServer, BinEnv)
}

func majorOf(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// IsNoServer reports whether err means the server binaries are missing.
func IsNoServer(err error) bool { return errors.Is(err, ErrNoServer) }

func required() bool {
	v := strings.TrimSpace(os.Getenv(RequireEnv))
	return v != "" && v != "0" && !strings.EqualFold(v, "false")
}
