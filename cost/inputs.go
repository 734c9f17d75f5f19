package cost

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"time"
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
}

var currencyRE = regexp.MustCompile(`^[A-Z]{3}$`)

// Validate reports every problem at once, each as "cost.<key>: message"
// (the config loader adds the line: `cost.<key> (line N): message`).
// Unknown keys and values of the wrong type are the config loader's to
// find (internal/yamlcheck), like every other block's.
func (in Inputs) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("cost.%s: %s", key, fmt.Sprintf(format, args...)))
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
