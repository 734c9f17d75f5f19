package report

import "encoding/json"

// MarshalJSON writes the figures listed in Missing as null: a figure that was
// not measured is never a 0 in results.json (DESIGN.md, "Energy, memory, cost").
func (c EnergyCell) MarshalJSON() ([]byte, error) {
	type plain EnergyCell
	return nullKeys(plain(c), c.Missing)
}

// MarshalJSON writes transfer_efficiency as null when it was not computed
// (TransferMetric empty), never as 0.
func (l AmdahlLoad) MarshalJSON() ([]byte, error) {
	type plain AmdahlLoad
	var missing []string
	if l.TransferMetric == "" {
		missing = []string{"transfer_efficiency"}
	}
	return nullKeys(plain(l), missing)
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
