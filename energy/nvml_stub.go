//go:build !(cgo && linux)

package energy

import (
	"fmt"
	"runtime"
)

// openNVML reports NVML unavailable: this binary was built without cgo or
// not for linux, and go-nvml needs both.
func openNVML(index int) (device, error) {
	return nil, fmt.Errorf("%w: built without NVML support (needs cgo on linux; this build: cgo disabled or GOOS=%s)",
		ErrUnavailable, runtime.GOOS)
}
