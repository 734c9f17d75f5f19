package energy

import (
	"errors"
	"fmt"
	"time"
)

// device is the NVML-shaped surface the sampler reads: one method per NVML
// call used, values in NVML's units. nvml.go implements it with go-nvml;
// tests implement it with a scripted fake. An error wrapping errNotSupported
// means the device does not support the quantity.
type device interface {
	// info identifies the device (name, UUID, driver, total memory).
	info() DeviceInfo
	// totalEnergyMJ: nvmlDeviceGetTotalEnergyConsumption, mJ since driver load.
	totalEnergyMJ() (uint64, error)
	// powerInstantMW: field FI_DEV_POWER_INSTANT, mW.
	powerInstantMW() (float64, error)
	// powerUsageMW: nvmlDeviceGetPowerUsage, mW (driver-averaged).
	powerUsageMW() (uint32, error)
	// memoryUsedBytes: nvmlDeviceGetMemoryInfo_v2 Used, bytes.
	memoryUsedBytes() (uint64, error)
	// processMemory: nvmlDeviceGetComputeRunningProcesses, bytes per PID.
	processMemory() ([]processMem, error)
	// smClockMHz: nvmlDeviceGetClockInfo(NVML_CLOCK_SM), MHz.
	smClockMHz() (uint32, error)
	// temperatureC: nvmlDeviceGetTemperature(NVML_TEMPERATURE_GPU), °C.
	temperatureC() (uint32, error)
	// enforcedPowerLimitMW: nvmlDeviceGetEnforcedPowerLimit, mW.
	enforcedPowerLimitMW() (uint32, error)
	// clocksEventReasons: nvmlDeviceGetCurrentClocksEventReasons bitmask.
	clocksEventReasons() (uint64, error)
	// close releases the device (nvmlShutdown).
	close() error
}

// processMem is one compute process's VRAM. UsedBytes is nil when NVML
// reports NVML_VALUE_NOT_AVAILABLE.
type processMem struct {
	PID       uint32
	UsedBytes *uint64
}

// deviceProbe samples a device; it implements probe.
type deviceProbe struct {
	index   int
	open_   func(index int) (device, error)
	pids    map[uint32]bool
	dev     device
	instant bool
	log     func(msg string, args ...any)
}

var _ probe = (*deviceProbe)(nil)

// GPUBuild is the one command that builds transferlab with NVML (go-nvml:
// cgo, linux only). The default build leaves NVML out, so that it needs no C
// compiler and prints no compiler warning; its NVML samplers report
// ErrUnavailable, "built without NVML".
const GPUBuild = "CGO_ENABLED=1 go build -tags nvml -o bin/transferlab ./cmd/transferlab"

// NewNVML returns a Sampler reading GPU deviceIndex (0-based, NVML order)
// through NVML. NVML is loaded at Start and shut down at Stop; with no driver
// Start and Stop return errors wrapping ErrUnavailable.
func NewNVML(deviceIndex int, opts ...Option) Sampler {
	return newDeviceSampler(deviceIndex, openNVML, opts...)
}

func newDeviceSampler(index int, open func(int) (device, error), opts ...Option) *runner {
	cfg := newConfig(opts)
	p := &deviceProbe{index: index, open_: open, log: cfg.log.Info}
	if len(cfg.pids) > 0 {
		p.pids = map[uint32]bool{}
		for _, pid := range cfg.pids {
			p.pids[uint32(pid)] = true
		}
	}
	return &runner{cfg: cfg, probe: p}
}

func (p *deviceProbe) open() (sourceInfo, error) {
	info := sourceInfo{
		source: SourceNVML,
		label:  "GPU-reported (NVML board counter; not facility energy)",
		device: DeviceInfo{Index: p.index},
	}
	if p.index < 0 {
		return info, fmt.Errorf("%w: device index %d is negative", ErrUnavailable, p.index)
	}
	dev, err := p.open_(p.index)
	if err != nil {
		if !errors.Is(err, ErrUnavailable) {
			err = fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		return info, err
	}
	p.dev = dev
	info.device = dev.info()
	info.device.Index = p.index
	if mw, err := dev.enforcedPowerLimitMW(); err == nil {
		info.powerLimitW = ptr(float64(mw) / 1000)
	} else {
		p.log("energy: enforced power limit not read", "error", err.Error())
	}
	// Prefer the instant power field; fall back to the driver-averaged reading.
	if _, err := dev.powerInstantMW(); err == nil {
		p.instant = true
		info.powerSource = PowerInstant
	} else {
		p.instant = false
		info.powerSource = PowerUsageAvg
		p.log("energy: instant power field unavailable, using driver-averaged power usage", "error", err.Error())
	}
	return info, nil
}

func (p *deviceProbe) take(at time.Duration) Sample {
	s := Sample{At: at}
	d := p.dev
	if v, err := d.totalEnergyMJ(); err == nil {
		s.EnergyMJ = float64(v)
		s.set(fieldEnergy)
	} else {
		s.fail(fieldEnergy, err)
	}
	if p.instant {
		if v, err := d.powerInstantMW(); err == nil {
			s.PowerW = v / 1000
			s.set(fieldPower)
		} else {
			s.fail(fieldPower, err)
		}
	} else if v, err := d.powerUsageMW(); err == nil {
		s.PowerW = float64(v) / 1000
		s.set(fieldPower)
	} else {
		s.fail(fieldPower, err)
	}
	if v, err := d.memoryUsedBytes(); err == nil {
		s.DeviceUsedBytes = v
		s.set(fieldMemory)
	} else {
		s.fail(fieldMemory, err)
	}
	if p.pids != nil {
		p.takeProcesses(&s)
	}
	if v, err := d.smClockMHz(); err == nil {
		s.SMClockMHz = v
		s.set(fieldSMClock)
	} else {
		s.fail(fieldSMClock, err)
	}
	if v, err := d.temperatureC(); err == nil {
		s.TempC = v
		s.set(fieldTemp)
	} else {
		s.fail(fieldTemp, err)
	}
	if v, err := d.clocksEventReasons(); err == nil {
		s.ClocksEventReasons = v
		s.set(fieldReasons)
	} else {
		s.fail(fieldReasons, err)
	}
	return s
}

// takeProcesses sums the VRAM of the configured PIDs. A sample where none
// of them is listed has no process figure (not 0).
func (p *deviceProbe) takeProcesses(s *Sample) {
	procs, err := p.dev.processMemory()
	if err != nil {
		s.fail(fieldProcess, err)
		return
	}
	var sum uint64
	found := false
	for _, pr := range procs {
		if !p.pids[pr.PID] || pr.UsedBytes == nil {
			continue
		}
		sum += *pr.UsedBytes
		found = true
	}
	if found {
		s.ProcessUsedBytes = sum
		s.set(fieldProcess)
	}
}

func (p *deviceProbe) close() error {
	if p.dev == nil {
		return nil
	}
	err := p.dev.close()
	p.dev = nil
	return err
}
