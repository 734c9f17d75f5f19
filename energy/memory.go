package energy

import (
	"context"
	"fmt"
)

// UsedMemory returns the GPU memory in use on device deviceIndex, in bytes,
// from nvmlDeviceGetMemoryInfo_v2 (the v1 call counts driver-reserved memory
// as used). It opens NVML for the one reading and shuts it down again. With
// no driver the error wraps ErrUnavailable. Its signature fits
// integrate.UsedMemoryFunc (the between-arms idle check).
func UsedMemory(deviceIndex int) func(ctx context.Context) (uint64, error) {
	return func(ctx context.Context) (uint64, error) {
		return usedMemory(ctx, deviceIndex, openNVML)
	}
}

func usedMemory(ctx context.Context, index int, open func(int) (device, error)) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	d, err := open(index)
	if err != nil {
		return 0, err
	}
	used, err := d.memoryUsedBytes()
	if cerr := d.close(); err == nil && cerr != nil {
		return 0, fmt.Errorf("energy: nvmlShutdown: %w", cerr)
	}
	if err != nil {
		return 0, fmt.Errorf("energy: GPU %d memory used: %w", index, err)
	}
	return used, nil
}
