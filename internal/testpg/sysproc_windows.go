//go:build windows

package testpg

import "syscall"

// runAs: Windows has no root for PostgreSQL to refuse (os.Geteuid is -1, so
// newRunner never asks to switch users); the child runs as the caller.
func runAs(_, _ uint32) *syscall.SysProcAttr { return nil }

// ownSession starts the child in a process group of its own, Windows' nearest
// to a session: a Ctrl+C sent to the test's group does not reach it.
func ownSession() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}
