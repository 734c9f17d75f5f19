//go:build linux

package loadgen

import (
	"syscall"
	"time"
)

// fineSleep blocks the calling thread in nanosleep(2) for d: typically
// ~60–90 µs late, against up to ~1 ms for a Go timer on an idle machine. The
// Go scheduler hands the P to other goroutines meanwhile.
func fineSleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	_ = syscall.Nanosleep(&ts, nil) // EINTR: the caller re-checks the time
}
