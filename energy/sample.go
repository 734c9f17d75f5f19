package energy

import (
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// field is one quantity of a Sample; a bit in Sample.has.
type field uint16

const (
	fieldEnergy field = 1 << iota
	fieldPower
	fieldMemory
	fieldProcess
	fieldSMClock
	fieldTemp
	fieldReasons
)

var fieldNames = []struct {
	f    field
	name string
}{
	{fieldEnergy, "energy"}, {fieldPower, "power"}, {fieldMemory, "memory"}, {fieldProcess, "process_memory"},
	{fieldSMClock, "sm_clock"}, {fieldTemp, "temperature"}, {fieldReasons, "clocks_event_reasons"},
}

func (f field) String() string {
	for _, n := range fieldNames {
		if n.f == f {
			return n.name
		}
	}
	return fmt.Sprintf("field(%d)", uint16(f))
}

// Sample is one reading of every quantity. A quantity whose read failed is
// listed in Errors (field name → error) and its value is meaningless.
type Sample struct {
	// At is the offset from the window's start (ns in JSON).
	At time.Duration `json:"at_ns"`
	// EnergyMJ is the total-energy counter in mJ (monotonic since driver load).
	EnergyMJ float64 `json:"energy_mj"`
	// PowerW is the power reading in W.
	PowerW float64 `json:"power_w"`
	// DeviceUsedBytes is device memory used (GetMemoryInfo_v2.Used).
	DeviceUsedBytes uint64 `json:"device_used_bytes"`
	// ProcessUsedBytes is the VRAM of the server's PIDs summed.
	ProcessUsedBytes uint64 `json:"process_used_bytes"`
	SMClockMHz       uint32 `json:"sm_clock_mhz"`
	TempC            uint32 `json:"temp_c"`
	// ClocksEventReasons is NVML's clocks-event (throttle) reason bitmask.
	ClocksEventReasons uint64            `json:"clocks_event_reasons"`
	Errors             map[string]string `json:"errors,omitempty"`

	has field
}

func (s *Sample) set(f field)    { s.has |= f }
func (s Sample) ok(f field) bool { return s.has&f != 0 }
func (s *Sample) fail(f field, err error) {
	if s.Errors == nil {
		s.Errors = map[string]string{}
	}
	s.Errors[f.String()] = err.Error()
}

// String is a compact description for logs.
func (s Sample) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "t=%.3fs", s.At.Seconds())
	if s.ok(fieldEnergy) {
		fmt.Fprintf(&b, " energy=%.0fmJ", s.EnergyMJ)
	}
	if s.ok(fieldPower) {
		fmt.Fprintf(&b, " power=%.1fW", s.PowerW)
	}
	if s.ok(fieldMemory) {
		fmt.Fprintf(&b, " used=%dB", s.DeviceUsedBytes)
	}
	if s.ok(fieldProcess) {
		fmt.Fprintf(&b, " proc_used=%dB", s.ProcessUsedBytes)
	}
	if s.ok(fieldSMClock) {
		fmt.Fprintf(&b, " sm=%dMHz", s.SMClockMHz)
	}
	if s.ok(fieldTemp) {
		fmt.Fprintf(&b, " temp=%dC", s.TempC)
	}
	if s.ok(fieldReasons) {
		fmt.Fprintf(&b, " reasons=%#x", s.ClocksEventReasons)
	}
	for k, v := range s.Errors {
		fmt.Fprintf(&b, " %s_err=%q", k, v)
	}
	return b.String()
}

// LogValue makes slog format a sample only when the record is logged.
func (s Sample) LogValue() slog.Value { return slog.StringValue(s.String()) }
