package chaos

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"readpast/internal/testenv"
)

func TestMain(m *testing.M) {
	code := testenv.Main(m)
	if built.path != "" {
		_ = os.RemoveAll(filepath.Dir(built.path))
	}
	os.Exit(code)
}

// The environment variables that turn a short run into a long one.
const (
	chaosEnv = "READPAST_CHAOS" // duration of the chaos and fault runs, e.g. 10m
	loadEnv  = "READPAST_LOAD"  // duration of the load run, e.g. 1m
)

// longRun returns the duration the variable asks for, or 0 for the short run.
func longRun(t *testing.T, name string) time.Duration {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("%s=%q: give a duration, e.g. 10m", name, v)
	}
	return d
}

var built struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

// binary builds the readpast binary once per test process, as the README says
// (go build -o readpast ./cmd/web), into a directory TestMain removes.
func binary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		gomod, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			built.err = err
			return
		}
		dir, err := os.MkdirTemp("", "readpast-chaos-")
		if err != nil {
			built.err = err
			return
		}
		built.path = filepath.Join(dir, "readpast")
		cmd := exec.Command("go", "build", "-o", built.path, "./cmd/web")
		cmd.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
		built.out, built.err = cmd.CombinedOutput()
	})
	if built.err != nil {
		t.Fatalf("building the readpast binary: %v\n%s", built.err, built.out)
	}
	return built.path
}
