package chaos

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// node is one process of the real binary: `readpast serve` on a database.
type node struct {
	name string
	cmd  *exec.Cmd
	log  string        // its log file
	done chan struct{} // closed once the process exited
	err  error         // how it exited, set before done is closed
}

// nodeArgs are the flags of every node the tests start; extra ones follow.
func nodeArgs(dsn, name string, extra ...string) []string {
	return append([]string{"serve", "--dsn", dsn, "--listen", "127.0.0.1:0", "--node-id", name,
		"--log-retention", "0", "--task-retention", "0"}, extra...)
}

// startNode starts a node process named name; it is killed when t ends if it
// still runs, and its log is printed when t failed.
func startNode(t *testing.T, dir, name string, args []string) *node {
	t.Helper()
	logPath := filepath.Join(dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary(t), args...)
	cmd.Env = childEnv()
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = dieWithParent()
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("starting node %s: %v", name, err)
	}
	n := &node{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		n.err = cmd.Wait()
		f.Close()
		close(n.done)
	}()
	t.Cleanup(func() {
		if n.running() {
			_ = cmd.Process.Kill()
			<-n.done
		}
		if t.Failed() {
			t.Logf("last lines of node %s's log:\n%s", name, tail(logPath, 30))
		}
	})
	return n
}

// childEnv is this process's environment without READPAST_* settings, so a
// node reads only the flags it is given.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "READPAST_") {
			env = append(env, kv)
		}
	}
	return env
}

// running reports whether the process has not exited.
func (n *node) running() bool {
	select {
	case <-n.done:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL and waits for the process to go.
func (n *node) kill(t *testing.T) {
	t.Helper()
	if err := n.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("killing node %s: %v", n.name, err)
	}
	<-n.done
}

// stop sends SIGTERM and waits up to within for a clean exit (code 0). It
// first waits until the node serves: a process signalled before main has
// installed its handler dies by the signal instead of draining, as a node
// restarted just before the end of a chaos run did (CI, 2026-11-27).
func (n *node) stop(t *testing.T, within time.Duration) time.Duration {
	t.Helper()
	n.url(t)
	began := time.Now()
	if err := n.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("stopping node %s: %v", n.name, err)
	}
	select {
	case <-n.done:
		if n.err != nil {
			t.Fatalf("node %s exited with %v after SIGTERM; log:\n%s", n.name, n.err, tail(n.log, 30))
		}
	case <-time.After(within):
		t.Fatalf("node %s did not stop within %s of SIGTERM; log:\n%s", n.name, within, tail(n.log, 30))
	}
	return time.Since(began)
}

var servingURL = regexp.MustCompile(`url=(http://\S+)`)

// url waits until the node logs where it serves, and returns it.
func (n *node) url(t *testing.T) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(n.log)
		if m := servingURL.FindSubmatch(b); m != nil {
			return string(m[1])
		}
		if !n.running() {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("node %s did not say where it serves; log:\n%s", n.name, tail(n.log, 30))
	return ""
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// A node stopped the moment it was started exits cleanly: stop waits for it
// to serve before it signals (before that fix the process died by SIGTERM).
func TestStopRightAfterStartDrainsCleanly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	n := startNode(t, dir, "brief", nodeArgs(filepath.Join(dir, "brief.db"), "brief"))
	n.stop(t, 30*time.Second)
}
