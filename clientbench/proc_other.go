//go:build !linux

package clientbench

import (
	"errors"
	"time"
)

// processCPU: see proc_linux.go.
func processCPU(int) (time.Duration, error) {
	return 0, errors.New("a child's CPU time needs Linux (/proc/PID/stat)")
}
