//go:build !unix

package loadgentest

import (
	"errors"
	"time"
)

// processCPU: no getrusage here, so BenchmarkServer's child fails with this.
func processCPU() (user, sys time.Duration, err error) {
	return 0, 0, errors.New("process CPU time needs getrusage (unix)")
}
