package testpg

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
)

// runner runs the server's own programs. PostgreSQL refuses to run as root, so
// as root (CI) it runs them as the postgres user, which must own the directory.
type runner struct {
	asPostgres bool
	uid, gid   uint32
	home       string
}

func newRunner() (runner, error) {
	if os.Geteuid() != 0 {
		return runner{}, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return runner{}, fmt.Errorf("testpg: running as root needs a postgres user to run the server as: %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return runner{}, fmt.Errorf("testpg: postgres user has a non-numeric uid %q or gid %q", u.Uid, u.Gid)
	}
	return runner{asPostgres: true, uid: uint32(uid), gid: uint32(gid), home: u.HomeDir}, nil
}

// own hands dir to the user the server runs as.
func (r runner) own(dir string) error {
	if !r.asPostgres {
		return nil
	}
	if err := os.Chown(dir, int(r.uid), int(r.gid)); err != nil {
		return fmt.Errorf("testpg: giving %s to the postgres user: %w", dir, err)
	}
	return nil
}

// command builds an exec.Cmd that runs as the server's user.
func (r runner) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	// A clean, small environment: PG* variables of the caller must not steer
	// initdb or pg_ctl at another cluster.
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C", "TZ=UTC"}
	if r.asPostgres {
		cmd.Env = append(cmd.Env, "HOME="+r.home, "USER=postgres", "LOGNAME=postgres")
		cmd.SysProcAttr = runAs(r.uid, r.gid)
		// The server must not inherit root's working directory, which postgres
		// cannot read.
		cmd.Dir = "/"
	} else {
		cmd.Env = append(cmd.Env, "HOME="+os.Getenv("HOME"))
	}
	return cmd
}
