//go:build !(nvml && cgo && linux)

package energy

import "fmt"

// openNVML reports NVML unavailable: this binary was built without the nvml
// build tag (or without cgo, or not for linux), and go-nvml needs all three.
func openNVML(int) (device, error) {
	return nil, fmt.Errorf("%w, built without NVML (the GPU build, on linux: %s)", ErrUnavailable, GPUBuild)
}
