//go:build !linux

package main

import "errors"

// allowedCPUs: see benchclient_pin_linux.go.
func allowedCPUs() ([]int, error) { return nil, errors.New("pinning needs Linux (sched_getaffinity)") }

// pinProcess: see benchclient_pin_linux.go.
func pinProcess([]int) (func() error, error) {
	return nil, errors.New("pinning needs Linux (sched_setaffinity)")
}
