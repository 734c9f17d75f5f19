//go:build !linux

package clientbench

import "errors"

// allowedCPUs: see pin_linux.go.
func allowedCPUs() ([]int, error) { return nil, errors.New("pinning needs Linux (sched_getaffinity)") }

// pinProcess: see pin_linux.go.
func pinProcess([]int) (func() error, error) {
	return nil, errors.New("pinning needs Linux (sched_setaffinity)")
}
