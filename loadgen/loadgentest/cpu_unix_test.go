//go:build unix

package loadgentest

import (
	"fmt"
	"syscall"
	"time"
)

// processCPU is this process's CPU time so far in user and in system
// (kernel) mode (getrusage).
func processCPU() (user, sys time.Duration, err error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano()), nil
}
