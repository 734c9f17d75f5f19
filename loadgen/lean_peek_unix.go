//go:build unix

package loadgen

import (
	"net"
	"syscall"
)

// idleClean reports whether nothing arrived on an idle keep-alive
// connection: no stray bytes (they would be read as the next request's
// response) and no close. One non-blocking recv(2) with MSG_PEEK; a
// connection it cannot inspect is taken as clean.
func idleClean(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	clean := true
	var b [1]byte
	_ = rc.Read(func(fd uintptr) bool {
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		// EAGAIN: nothing there. No error: a stray byte, or EOF (0 bytes).
		// Any other error (a reset): not reusable either.
		clean = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
		return true
	})
	return clean
}
