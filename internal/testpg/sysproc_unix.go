//go:build unix

package testpg

import "syscall"

// runAs makes a child run as uid:gid: PostgreSQL refuses to run as root.
func runAs(uid, gid uint32) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
}

// ownSession gives a child a session of its own, so that killing the test's
// process group leaves it running (the guard that cleans up after a crash).
func ownSession() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }
