//go:build windows

package bench

import (
	"syscall"
	"time"
)

// ProcessCPU is this process's own CPU time (user and system) so far, from
// GetProcessTimes: the same figure process_cpu_unix.go reads with getrusage(2).
func ProcessCPU() time.Duration {
	self, err := syscall.GetCurrentProcess() // a pseudo-handle: nothing to close
	if err != nil {
		return 0
	}
	var creation, exit, kernel, user syscall.Filetime
	if syscall.GetProcessTimes(self, &creation, &exit, &kernel, &user) != nil {
		return 0
	}
	// A Filetime counts 100-nanosecond intervals in two 32-bit halves.
	ticks := func(f syscall.Filetime) int64 { return int64(f.HighDateTime)<<32 | int64(f.LowDateTime) }
	return time.Duration((ticks(kernel) + ticks(user)) * 100)
}
