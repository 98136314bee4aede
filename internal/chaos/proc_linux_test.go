package chaos

import "syscall"

// dieWithParent makes a node process die with the test process, so a test
// that times out leaves no node running.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
