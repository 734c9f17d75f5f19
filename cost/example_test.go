package cost_test

import (
	"fmt"
	"time"

	"github.com/transferlab/transferlab/cost"
)

// A made-up price, for the arithmetic only: 4 USD per GPU-hour, one GPU,
// a 60 s window that completed 30 000 output tokens out of 90 000 in total,
// and 24 000 J of GPU-reported energy.
func ExampleCompute() {
	in := cost.Inputs{PricePerGPUHour: 4, Currency: "USD", PriceDate: "2026-11-01",
		PriceSource: "example, not a market price", GPUs: 1, Utilisation: 0.8}
	e := 24_000.0
	r, err := cost.Compute(in, 60*time.Second, 30_000, 90_000, &e)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("GPU cost of the window: %.4f %s\n", r.GPUCost, in.Currency)
	fmt.Printf("per 1M output tokens: %.4f %s (at %.0f %% utilisation: %.4f)\n",
		*r.CostPer1MOutputTokens, in.Currency, 100*in.Utilisation, *r.CostPer1MOutputTokensAtUtilisation)
	fmt.Printf("per 1M total tokens: %.4f %s\n", *r.CostPer1MTotalTokens, in.Currency)
	fmt.Printf("energy: %.2f J per output token; energy cost: %v\n", *r.JPerOutputToken, r.EnergyCost)
	// Output:
	// GPU cost of the window: 0.0667 USD
	// per 1M output tokens: 2.2222 USD (at 80 % utilisation: 2.7778)
	// per 1M total tokens: 0.7407 USD
	// energy: 0.80 J per output token; energy cost: <nil>
}
