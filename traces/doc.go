// Package traces reads public LLM inference request traces (Azure 2023/2024,
// vidur/Splitwise, Mooncake, BurstGPT, generic CSV/JSONL), normalises them to
// one Schedule, transforms schedules (time window, sampling, time scaling,
// token filters, context clamping, sharding) and builds synthetic arrivals
// (constant, Poisson, Gamma).
//
// It does not know HTTP, servers or load generation: a Schedule is data.
package traces
