//go:build nvml && cgo && linux

package energy

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// nvmlValueNotAvailable is NVML_VALUE_NOT_AVAILABLE for unsigned long long
// fields such as a process's usedGpuMemory (nvml.h).
const nvmlValueNotAvailable = math.MaxUint64

// nvmlDevice implements device with go-nvml. Every call is made only after a
// successful Init: calling NVML after a failed Init kills the process
// (NOTES-deps.md).
type nvmlDevice struct {
	lib  nvml.Interface
	dev  nvml.Device
	desc DeviceInfo
	// Symbols newer than some drivers (r510, r535): calling a missing one
	// through the lazily bound library would abort the process.
	hasMemoryV2, hasEventReasons bool
}

var _ device = (*nvmlDevice)(nil)

// openNVML loads libnvidia-ml, initialises NVML and opens device index.
// Without a driver Init returns ERROR_LIBRARY_NOT_FOUND and the error wraps
// ErrUnavailable.
func openNVML(index int) (device, error) {
	lib := nvml.New()
	if ret := lib.Init(); ret != nvml.SUCCESS {
		// No Shutdown here: any further NVML call after a failed Init is unsafe.
		return nil, fmt.Errorf("%w: nvmlInit: %s", ErrUnavailable, ret.Error())
	}
	dev, ret := lib.DeviceGetHandleByIndex(index)
	if ret != nvml.SUCCESS {
		n, cret := lib.DeviceGetCount()
		_ = lib.Shutdown()
		if cret == nvml.SUCCESS {
			return nil, fmt.Errorf("%w: nvmlDeviceGetHandleByIndex(%d) of %d devices: %s", ErrUnavailable, index, n, ret.Error())
		}
		return nil, fmt.Errorf("%w: nvmlDeviceGetHandleByIndex(%d): %s", ErrUnavailable, index, ret.Error())
	}
	d := &nvmlDevice{lib: lib, dev: dev}
	d.hasMemoryV2 = lib.Extensions().LookupSymbol("nvmlDeviceGetMemoryInfo_v2") == nil
	d.hasEventReasons = lib.Extensions().LookupSymbol("nvmlDeviceGetCurrentClocksEventReasons") == nil
	d.desc.Name, _ = dev.GetName()
	d.desc.UUID, _ = dev.GetUUID()
	d.desc.DriverVersion, _ = lib.SystemGetDriverVersion()
	d.desc.NVMLVersion, _ = lib.SystemGetNVMLVersion()
	if d.hasMemoryV2 {
		if m, ret := dev.GetMemoryInfo_v2(); ret == nvml.SUCCESS {
			d.desc.MemoryTotalBytes = m.Total
		}
	}
	return d, nil
}

// nvmlErr turns an NVML return code into an error; ERROR_NOT_SUPPORTED wraps errNotSupported.
func nvmlErr(call string, ret nvml.Return) error {
	if ret == nvml.ERROR_NOT_SUPPORTED {
		return fmt.Errorf("%s: %w (%s)", call, errNotSupported, ret.Error())
	}
	return fmt.Errorf("%s: %s", call, ret.Error())
}

func (d *nvmlDevice) info() DeviceInfo { return d.desc }

func (d *nvmlDevice) totalEnergyMJ() (uint64, error) {
	v, ret := d.dev.GetTotalEnergyConsumption()
	if ret != nvml.SUCCESS {
		return 0, nvmlErr("nvmlDeviceGetTotalEnergyConsumption", ret)
	}
	return v, nil
}

func (d *nvmlDevice) powerInstantMW() (float64, error) {
	fv := []nvml.FieldValue{{FieldId: nvml.FI_DEV_POWER_INSTANT}}
	if ret := d.dev.GetFieldValues(fv); ret != nvml.SUCCESS {
		return 0, nvmlErr("nvmlDeviceGetFieldValues(FI_DEV_POWER_INSTANT)", ret)
	}
	if r := nvml.Return(fv[0].NvmlReturn); r != nvml.SUCCESS {
		return 0, nvmlErr("FI_DEV_POWER_INSTANT", r)
	}
	v, err := fieldValue(fv[0])
	if err != nil {
		return 0, fmt.Errorf("FI_DEV_POWER_INSTANT: %w", err)
	}
	return v, nil
}

// fieldValue decodes an NVML field value by its type (nvmlValueType_t).
func fieldValue(f nvml.FieldValue) (float64, error) {
	b := f.Value[:]
	switch nvml.ValueType(f.ValueType) {
	case nvml.VALUE_TYPE_DOUBLE:
		return math.Float64frombits(binary.NativeEndian.Uint64(b)), nil
	case nvml.VALUE_TYPE_UNSIGNED_INT:
		return float64(binary.NativeEndian.Uint32(b)), nil
	case nvml.VALUE_TYPE_UNSIGNED_LONG, nvml.VALUE_TYPE_UNSIGNED_LONG_LONG:
		return float64(binary.NativeEndian.Uint64(b)), nil
	case nvml.VALUE_TYPE_SIGNED_LONG_LONG:
		return float64(int64(binary.NativeEndian.Uint64(b))), nil
	case nvml.VALUE_TYPE_SIGNED_INT:
		return float64(int32(binary.NativeEndian.Uint32(b))), nil
	case nvml.VALUE_TYPE_UNSIGNED_SHORT:
		return float64(binary.NativeEndian.Uint16(b)), nil
	default:
		return 0, fmt.Errorf("unknown NVML value type %d", f.ValueType)
	}
}

func (d *nvmlDevice) powerUsageMW() (uint32, error) {
	v, ret := d.dev.GetPowerUsage()
	if ret != nvml.SUCCESS {
		return 0, nvmlErr("nvmlDeviceGetPowerUsage", ret)
	}
	return v, nil
}

func (d *nvmlDevice) memoryUsedBytes() (uint64, error) {
	if !d.hasMemoryV2 {
		// The v1 call counts driver-reserved memory as used: no figure beats a wrong one.
		return 0, fmt.Errorf("nvmlDeviceGetMemoryInfo_v2 missing from this driver's NVML: %w (v1 would count reserved memory as used)", errNotSupported)
	}
	m, ret := d.dev.GetMemoryInfo_v2()
	if ret != nvml.SUCCESS {
		return 0, nvmlErr("nvmlDeviceGetMemoryInfo_v2", ret)
	}
	return m.Used, nil
}

func (d *nvmlDevice) processMemory() ([]processMem, error) {
	ps, ret := d.dev.GetComputeRunningProcesses()
	if ret != nvml.SUCCESS {
		return nil, nvmlErr("nvmlDeviceGetComputeRunningProcesses", ret)
	}
	out := make([]processMem, 0, len(ps))
	for _, p := range ps {
		pm := processMem{PID: p.Pid}
		if p.UsedGpuMemory != nvmlValueNotAvailable {
			pm.UsedBytes = ptr(p.UsedGpuMemory)
		}
		out = append(out, pm)
	}
	return out, nil
}

func (d *nvmlDevice) smClockMHz() (uint32, error) {
	v, ret := d.dev.GetClockInfo(nvml.CLOCK_SM)
	if ret != nvml.SUCCESS {
		return 0, nvmlErr("nvmlDeviceGetClockInfo(SM)", ret)
	}
	return v, nil
}

func (d *nvmlDevice) temperatureC() (uint32, error) {
	v, ret := d.dev.GetTemperature(nvml.TEMPERATURE_GPU)
	if ret != nvml.SUCCESS {
		return 0, nvmlErr("nvmlDeviceGetTemperature(GPU)", ret)
	}
	return v, nil
}

func (d *nvmlDevice) enforcedPowerLimitMW() (uint32, error) {
	v, ret := d.dev.GetEnforcedPowerLimit()
	if ret != nvml.SUCCESS {
		return 0, nvmlErr("nvmlDeviceGetEnforcedPowerLimit", ret)
	}
	return v, nil
}

func (d *nvmlDevice) clocksEventReasons() (uint64, error) {
	if !d.hasEventReasons {
		// Drivers before r535 name it "throttle reasons"; same bits.
		v, ret := d.dev.GetCurrentClocksThrottleReasons()
		if ret != nvml.SUCCESS {
			return 0, nvmlErr("nvmlDeviceGetCurrentClocksThrottleReasons", ret)
		}
		return v, nil
	}
	v, ret := d.dev.GetCurrentClocksEventReasons()
	if ret != nvml.SUCCESS {
		return 0, nvmlErr("nvmlDeviceGetCurrentClocksEventReasons", ret)
	}
	return v, nil
}

func (d *nvmlDevice) close() error {
	if ret := d.lib.Shutdown(); ret != nvml.SUCCESS {
		return fmt.Errorf("nvmlShutdown: %s", ret.Error())
	}
	return nil
}
