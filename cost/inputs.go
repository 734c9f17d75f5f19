package cost

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"time"

	"go.yaml.in/yaml/v3"
)

// Inputs are the explicit price inputs, from the experiment config's `cost:`
// block. No field has a built-in default: a price without a currency, date
// and source is refused.
type Inputs struct {
	// PricePerGPUHour is the price of one GPU for one hour, in Currency (> 0).
	PricePerGPUHour float64 `yaml:"price_per_gpu_hour" json:"price_per_gpu_hour"`
	// Currency is the ISO 4217 code of every price, e.g. "USD".
	Currency string `yaml:"currency" json:"currency"`
	// PriceDate is when the price was quoted, YYYY-MM-DD.
	PriceDate string `yaml:"price_date" json:"price_date"`
	// PriceSource says where the price comes from (URL, contract, quote).
	PriceSource string `yaml:"price_source" json:"price_source"`
	// GPUs is how many GPUs the server occupies (≥ 1).
	GPUs int `yaml:"gpus" json:"gpus"`
	// Utilisation is the assumed fraction of paid GPU-hours that serve load
	// at the measured rate, in (0, 1]; the *AtUtilisation figures divide by it.
	Utilisation float64 `yaml:"utilisation" json:"utilisation"`
	// EnergyPricePerKWh is the electricity price per kWh in Currency
	// (optional; 0 means not given).
	EnergyPricePerKWh float64 `yaml:"energy_price_per_kwh,omitempty" json:"energy_price_per_kwh,omitempty"`
	// EnergyPriceSource says where the energy price comes from; required
	// when EnergyPricePerKWh is given.
	EnergyPriceSource string `yaml:"energy_price_source,omitempty" json:"energy_price_source,omitempty"`

	// lines maps YAML keys to their line numbers when decoded from YAML.
	lines map[string]int
}

// yamlKeys are the keys of the `cost:` block, in field order.
var yamlKeys = []string{"price_per_gpu_hour", "currency", "price_date", "price_source", "gpus",
	"utilisation", "energy_price_per_kwh", "energy_price_source"}

var currencyRE = regexp.MustCompile(`^[A-Z]{3}$`)

// UnmarshalYAML decodes the block, rejecting unknown keys with their line
// (a custom unmarshaller does not inherit the decoder's KnownFields), and
// remembers each key's line so Validate can name it.
func (in *Inputs) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: cost: want a mapping of %v", n.Line, yamlKeys)
	}
	lines := map[string]int{"": n.Line}
	var errs []error
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if !slices.Contains(yamlKeys, k.Value) {
			errs = append(errs, fmt.Errorf("line %d: cost.%s: unknown key (known: %v)", k.Line, k.Value, yamlKeys))
			continue
		}
		lines[k.Value] = k.Line
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	type plain Inputs // no UnmarshalYAML: avoids recursion
	var p plain
	if err := n.Decode(&p); err != nil {
		return fmt.Errorf("line %d: cost: %w", n.Line, err)
	}
	*in = Inputs(p)
	in.lines = lines
	return nil
}

// Validate reports every problem at once, each naming its field
// (cost.<key>) and, when decoded from YAML, its line.
func (in Inputs) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		where := "cost." + key
		if l, ok := in.lines[key]; ok {
			where = fmt.Sprintf("line %d: %s", l, where)
		} else if l, ok := in.lines[""]; ok {
			where = fmt.Sprintf("line %d: %s (not set in the cost block)", l, where)
		}
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{where}, args...)...))
	}
	if !(in.PricePerGPUHour > 0) || math.IsInf(in.PricePerGPUHour, 0) {
		bad("price_per_gpu_hour", "must be a finite price > 0 in the given currency, got %v (no price is built in)", in.PricePerGPUHour)
	}
	if !currencyRE.MatchString(in.Currency) {
		bad("currency", "must be an ISO 4217 code such as USD or EUR, got %q", in.Currency)
	}
	if _, err := time.Parse(time.DateOnly, in.PriceDate); err != nil {
		bad("price_date", "must be the date the price was quoted, YYYY-MM-DD, got %q", in.PriceDate)
	}
	if in.PriceSource == "" {
		bad("price_source", "must say where the price comes from (URL, contract, quote)")
	}
	if in.GPUs < 1 {
		bad("gpus", "must be ≥ 1, got %d", in.GPUs)
	}
	if !(in.Utilisation > 0 && in.Utilisation <= 1) {
		bad("utilisation", "must be the assumed fraction of paid GPU-hours serving load, in (0, 1], got %v", in.Utilisation)
	}
	if !(in.EnergyPricePerKWh >= 0) || math.IsInf(in.EnergyPricePerKWh, 0) {
		bad("energy_price_per_kwh", "must be a finite price ≥ 0 (0: not given), got %v", in.EnergyPricePerKWh)
	}
	if in.EnergyPricePerKWh > 0 && in.EnergyPriceSource == "" {
		bad("energy_price_source", "must say where the energy price comes from when energy_price_per_kwh is given")
	}
	return errors.Join(errs...)
}
