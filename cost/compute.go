package cost

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// JoulesPerKWh converts energy: 1 kWh = 3.6 × 10⁶ J.
const JoulesPerKWh = 3.6e6

// Formula is the cost formula, echoed in every Result.
const Formula = "cost per 1M tokens = (price_per_gpu_hour × gpus × window_h) / tokens × 10^6; " +
	"at utilisation u: the same / u; energy cost = energy_j / 3.6e6 × energy_price_per_kwh"

// Result is the cost of one measured window, with every input echoed.
// Money is in Inputs.Currency. A figure that is undefined (no tokens, no
// energy, no energy price) is null, never 0.
type Result struct {
	// Inputs are the price inputs as given.
	Inputs Inputs `json:"inputs"`
	// Formula states how the figures were computed.
	Formula string `json:"formula"`
	// WindowS is the measured window in seconds; OutputTokens and
	// TotalTokens (input + output) are the tokens completed in it.
	WindowS      float64 `json:"window_s"`
	OutputTokens int     `json:"output_tokens"`
	TotalTokens  int     `json:"total_tokens"`
	// EnergyJ is the energy given by the caller (energy.Window.EnergyJ:
	// GPU-reported board energy, or simulated), J; null when not given.
	EnergyJ *float64 `json:"energy_j"`

	// GPUCost is price_per_gpu_hour × gpus × window hours, in Currency.
	GPUCost float64 `json:"gpu_cost"`
	// CostPer1MOutputTokens = GPUCost / OutputTokens × 10⁶, in Currency.
	CostPer1MOutputTokens *float64 `json:"cost_per_1m_output_tokens"`
	// CostPer1MTotalTokens = GPUCost / TotalTokens × 10⁶, in Currency.
	CostPer1MTotalTokens *float64 `json:"cost_per_1m_total_tokens"`
	// CostPer1MOutputTokensAtUtilisation = CostPer1MOutputTokens / Utilisation:
	// the cost when only that fraction of paid hours serves load at this rate.
	CostPer1MOutputTokensAtUtilisation *float64 `json:"cost_per_1m_output_tokens_at_utilisation"`
	CostPer1MTotalTokensAtUtilisation  *float64 `json:"cost_per_1m_total_tokens_at_utilisation"`

	// JPerOutputToken = EnergyJ / OutputTokens, J/token.
	JPerOutputToken *float64 `json:"j_per_output_token"`
	// EnergyKWh = EnergyJ / 3.6 × 10⁶.
	EnergyKWh *float64 `json:"energy_kwh"`
	// EnergyCost = EnergyKWh × EnergyPricePerKWh, in Currency.
	EnergyCost *float64 `json:"energy_cost"`
	// EnergyCostPer1MOutputTokens = EnergyCost / OutputTokens × 10⁶, in Currency.
	EnergyCostPer1MOutputTokens *float64 `json:"energy_cost_per_1m_output_tokens"`

	// Notes say why a figure is null.
	Notes []string `json:"notes,omitempty"`
}

// Compute prices one measured window: window is its length, outputTokens
// and totalTokens (input + output, ≥ outputTokens) the tokens completed in
// it, energyJ its headline energy (nil when unavailable: energy figures are
// then null). It fails on invalid inputs (Validate) or a window ≤ 0.
func Compute(in Inputs, window time.Duration, outputTokens, totalTokens int, energyJ *float64) (Result, error) {
	var errs []error
	if err := in.Validate(); err != nil {
		errs = append(errs, err)
	}
	if window <= 0 {
		errs = append(errs, fmt.Errorf("cost: window must be > 0, got %v", window))
	}
	if outputTokens < 0 || totalTokens < outputTokens {
		errs = append(errs, fmt.Errorf("cost: tokens: want 0 ≤ output (%d) ≤ total (%d)", outputTokens, totalTokens))
	}
	if energyJ != nil && (!(*energyJ >= 0) || math.IsInf(*energyJ, 0)) {
		errs = append(errs, fmt.Errorf("cost: energy must be a finite number of joules ≥ 0, got %v", *energyJ))
	}
	if err := errors.Join(errs...); err != nil {
		return Result{}, err
	}
	r := Result{
		Inputs:       in,
		Formula:      Formula,
		WindowS:      window.Seconds(),
		OutputTokens: outputTokens,
		TotalTokens:  totalTokens,
		GPUCost:      in.PricePerGPUHour * float64(in.GPUs) * window.Hours(),
	}
	if energyJ != nil {
		r.EnergyJ = ptr(*energyJ)
	}
	r.CostPer1MOutputTokens = per1M(r.GPUCost, outputTokens)
	r.CostPer1MTotalTokens = per1M(r.GPUCost, totalTokens)
	r.CostPer1MOutputTokensAtUtilisation = divided(r.CostPer1MOutputTokens, in.Utilisation)
	r.CostPer1MTotalTokensAtUtilisation = divided(r.CostPer1MTotalTokens, in.Utilisation)
	if outputTokens == 0 {
		r.Notes = append(r.Notes, "no output tokens in the window: per-token figures undefined")
	} else if totalTokens == 0 {
		r.Notes = append(r.Notes, "no tokens in the window: per-total-token figures undefined")
	}
	switch {
	case r.EnergyJ == nil:
		r.Notes = append(r.Notes, "energy unavailable: no J per token and no energy cost")
	default:
		if outputTokens > 0 {
			r.JPerOutputToken = ptr(*r.EnergyJ / float64(outputTokens))
		}
		r.EnergyKWh = ptr(*r.EnergyJ / JoulesPerKWh)
		if in.EnergyPricePerKWh > 0 {
			r.EnergyCost = ptr(*r.EnergyKWh * in.EnergyPricePerKWh)
			r.EnergyCostPer1MOutputTokens = per1M(*r.EnergyCost, outputTokens)
		} else {
			r.Notes = append(r.Notes, "no energy_price_per_kwh given: no energy cost")
		}
	}
	return r, nil
}

func ptr[T any](v T) *T { return &v }

// per1M is amount / tokens × 10⁶, nil when tokens ≤ 0.
func per1M(amount float64, tokens int) *float64 {
	if tokens <= 0 {
		return nil
	}
	return ptr(amount / float64(tokens) * 1e6)
}

func divided(p *float64, by float64) *float64 {
	if p == nil || by <= 0 {
		return nil
	}
	return ptr(*p / by)
}
