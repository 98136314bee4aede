package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// CPUMeter reads how much CPU a PostgreSQL server running on this machine has
// used: its postmaster and every process under it (backends, autovacuum,
// the WAL writer), counting backends that have exited too, from /proc. It is
// what "server CPU per task" is measured with, for ReadPast and for River alike.
type CPUMeter struct {
	postmaster int
}

// NewCPUMeter finds the server behind dsn: the parent of its own backend. It
// fails when the server is not PostgreSQL on this machine (no /proc entry).
func NewCPUMeter(ctx context.Context, dsn string) (*CPUMeter, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("server CPU: connecting: %w", err)
	}
	defer conn.Close(ctx)
	var backend int
	if err := conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		return nil, fmt.Errorf("server CPU: reading the backend pid: %w", err)
	}
	parent, err := parentPID(backend)
	if err != nil {
		return nil, fmt.Errorf("server CPU: the server does not run on this machine: %w", err)
	}
	return &CPUMeter{postmaster: parent}, nil
}

// Used returns the server's CPU time so far (user and system). A backend that
// has exited is counted once its postmaster has reaped it, in its children's
// times, so only differences over a span that outlives a few exits are exact.
func (m *CPUMeter) Used() (time.Duration, error) {
	f, err := statFields(m.postmaster)
	if err != nil {
		return 0, fmt.Errorf("server CPU: reading the postmaster: %w", err)
	}
	// utime, stime, cutime, cstime: fields 14–17 of /proc/<pid>/stat.
	ticks := f[11] + f[12] + f[13] + f[14]
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		pid, err := strconv.Atoi(filepath.Base(p))
		if err != nil || pid == m.postmaster {
			continue
		}
		if f, err := statFields(pid); err == nil && int(f[1]) == m.postmaster {
			ticks += f[11] + f[12]
		}
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times: 100 on every
// Linux architecture Go runs on.
const clockTicks = 100

func parentPID(pid int) (int, error) {
	f, err := statFields(pid)
	if err != nil {
		return 0, err
	}
	return int(f[1]), nil
}

// statFields returns the numeric fields of /proc/<pid>/stat after the command
// name, from the state (field 3) on: f[1] is the parent pid (field 4), f[11]
// utime (field 14). The state letter reads as 0.
func statFields(pid int) ([]int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	// The command name is in parentheses and may hold spaces.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, fmt.Errorf("/proc/%d/stat: unexpected form", pid)
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 15 {
		return nil, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields))
	}
	out := make([]int64, len(fields))
	for j, x := range fields {
		out[j], _ = strconv.ParseInt(x, 10, 64)
	}
	return out, nil
}
