package testpg

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

// shared is the one server of a test binary, started by the first Shared call.
var shared struct {
	once sync.Once
	srv  *Server
	err  error
	mu   sync.Mutex // guards srv for Main's cleanup
}

// Shared returns the test binary's shared server, starting it on first use. With
// no server binaries installed it skips t, or fails it when READPAST_REQUIRE_POSTGRES
// is set. Call Main from TestMain so the server is stopped when the tests end.
func Shared(t testing.TB) *Server {
	t.Helper()
	shared.once.Do(func() {
		srv, err := Start()
		shared.mu.Lock()
		shared.srv, shared.err = srv, err
		shared.mu.Unlock()
	})
	switch {
	case shared.err == nil:
		return shared.srv
	case IsNoServer(shared.err) && !required():
		t.Skipf("%v; set %s=1 to make this a failure", shared.err, RequireEnv)
	default:
		t.Fatalf("starting the test PostgreSQL server: %v", shared.err)
	}
	return nil
}

// Main runs the tests and then stops the shared server, if one was started. Use it
// as os.Exit(testpg.Main(m)) in TestMain.
func Main(m *testing.M) int {
	code := m.Run()
	shared.mu.Lock()
	srv := shared.srv
	shared.mu.Unlock()
	if srv != nil {
		if err := srv.Close(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// Private starts a server of t's own, for a test that stops and starts it
// (connection loss) and so must not use the shared one, and closes it when t
// ends, after the test's databases are dropped. Like Shared, it skips t when no
// server binaries are installed, or fails it when READPAST_REQUIRE_POSTGRES is set.
func Private(t testing.TB) *Server {
	t.Helper()
	srv, err := Start()
	switch {
	case err == nil:
	case IsNoServer(err) && !required():
		t.Skipf("%v; set %s=1 to make this a failure", err, RequireEnv)
	default:
		t.Fatalf("starting a private test PostgreSQL server: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("closing the private test PostgreSQL server: %v", err)
		}
	})
	return srv
}
