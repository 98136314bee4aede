//go:build unix

package ui

import "syscall"

// setRecvBuffer caps a socket's receive buffer (SO_RCVBUF), so a client that
// never reads fills it after a few kilobytes.
func setRecvBuffer(fd uintptr, bytes int) {
	_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, bytes)
}
