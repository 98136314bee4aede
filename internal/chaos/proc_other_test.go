//go:build !linux

package chaos

import (
	"syscall"
	"time"
)

// dieWithParent: only Linux can tie a child's life to its parent's.
func dieWithParent() *syscall.SysProcAttr { return nil }

// cpuTime: read from /proc on Linux only; 0 elsewhere.
func cpuTime(int) time.Duration { return 0 }
