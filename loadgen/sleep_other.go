//go:build !linux

package loadgen

import (
	"runtime"
	"time"
)

// fineSleep yields until d has passed (no precise sleep outside Linux).
func fineSleep(d time.Duration) {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		runtime.Gosched()
	}
}
