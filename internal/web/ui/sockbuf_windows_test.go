//go:build windows

package ui

import "syscall"

// setRecvBuffer caps a socket's receive buffer (SO_RCVBUF), so a client that
// never reads fills it after a few kilobytes; Windows takes a socket handle.
func setRecvBuffer(fd uintptr, bytes int) {
	_ = syscall.SetsockoptInt(syscall.Handle(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, bytes)
}
