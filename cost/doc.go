// Package cost turns explicit price inputs and one measured window into cost
// per 1M tokens and energy per token:
//
//	cost per 1M output tokens = (price per GPU-hour × GPUs × window hours) / output tokens × 10⁶
//
// (DESIGN.md, "Energy, memory, cost"), the same per 1M total
// (input + output) tokens, and, when a price per kWh is given, the energy
// cost of the GPU-reported energy. Every input is echoed in the Result.
//
// It does not know where the inputs came from, and carries no price of its
// own: a price, its currency, date and source must be given (configs may
// quote a published rate with its source and date). It does not measure
// energy (package energy) or count tokens (the caller does).
package cost
