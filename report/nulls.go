package report

import "encoding/json"

// MarshalJSON writes the figures listed in Missing as null: a figure that was
// not measured is never a 0 in results.json (DESIGN.md, "Energy, memory, cost").
func (c EnergyCell) MarshalJSON() ([]byte, error) {
	type plain EnergyCell
	return nullKeys(plain(c), c.Missing)
}

// MarshalJSON writes transfer_efficiency as null when it was not computed
// (TransferMetric empty), and bound_low/bound_high as null when no interval
// was given (both 0), never as 0.
func (l AmdahlLoad) MarshalJSON() ([]byte, error) {
	type plain AmdahlLoad
	var missing []string
	if l.TransferMetric == "" {
		missing = append(missing, "transfer_efficiency")
	}
	if l.BoundLow == 0 && l.BoundHigh == 0 {
		missing = append(missing, "bound_low", "bound_high")
	}
	return nullKeys(plain(l), missing)
}

// MarshalJSON writes value, low and high as null when no repetition supports
// the estimate (Reps == 0: refused for too few samples, or not measured; Note
// says which) and it was not derived from other figures (Derived ""), never
// as 0. Reading null back leaves them 0 with Reps 0, which every renderer
// shows as "not measured" with the note. A derived estimate writes its
// value unless it has none (Value 0: a bound only), its low end, and its
// high end unless it has none (High 0). Any other estimate without an
// interval writes a bound it does not have (0) as null, never a zero-width
// range around its value.
func (e Estimate) MarshalJSON() ([]byte, error) {
	type plain Estimate
	var missing []string
	switch {
	case e.Derived != "":
		if e.Value == 0 {
			missing = append(missing, "value")
		}
		if e.High == 0 {
			missing = append(missing, "high")
		}
	case e.Reps == 0:
		missing = []string{"value", "low", "high"}
	case !e.Interval:
		// A bound not known is null, not 0 (a capacity gain with one side
		// open, or none).
		if e.Low == 0 {
			missing = append(missing, "low")
		}
		if e.High == 0 {
			missing = append(missing, "high")
		}
	}
	return nullKeys(plain(e), missing)
}

// MarshalJSON writes next_load_rps as null when no measured load lies above
// the capacity (NextLoadRPS 0), never as 0 req/s.
func (c Capacity) MarshalJSON() ([]byte, error) {
	type plain Capacity
	var missing []string
	if c.NextLoadRPS == 0 {
		missing = []string{"next_load_rps"}
	}
	return nullKeys(plain(c), missing)
}

// nullKeys marshals v, then replaces the named top-level keys' values with null.
func nullKeys(v any, keys []string) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil || len(keys) == 0 {
		return b, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for _, k := range keys {
		if _, ok := m[k]; ok {
			m[k] = json.RawMessage("null")
		}
	}
	return json.Marshal(m)
}
