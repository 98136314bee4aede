//go:build unix

package bench

import (
	"syscall"
	"time"
)

// ProcessCPU is this process's own CPU time (user and system) so far, from
// getrusage(2). process_cpu_windows.go reads the same figure on Windows.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
