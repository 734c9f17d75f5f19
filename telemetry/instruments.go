package telemetry

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/metric"
)

// instruments are the metric instruments of one Exporter.
type instruments struct {
	operationDuration metric.Float64Histogram // E2E, s
	timeToFirstChunk  metric.Float64Histogram // first SSE message − sent_at, s
	timePerChunk      metric.Float64Histogram // ITL, s
	tokenUsage        metric.Int64Histogram   // tokens per request
	ttft              metric.Float64Histogram // s
	ttftIntended      metric.Float64Histogram // s
	ttfo              metric.Float64Histogram // s
	tpot              metric.Float64Histogram // s
	scheduleLag       metric.Float64Histogram // s
	tokens            metric.Int64Counter     // tokens
	requests          metric.Int64Counter     // requests
	gpuPower          metric.Float64Gauge     // W
	gpuMemoryUsed     metric.Int64Gauge       // bytes
}

// newInstruments creates every instrument on m with its unit, description
// and advised buckets (README.md, "Metrics").
func newInstruments(m metric.Meter) (instruments, error) {
	var in instruments
	var errs []error
	hist := func(name, unit, desc string, buckets []float64) metric.Float64Histogram {
		return check[metric.Float64Histogram](&errs, name)(m.Float64Histogram(name, metric.WithUnit(unit), metric.WithDescription(desc), metric.WithExplicitBucketBoundaries(buckets...)))
	}
	in.operationDuration = hist(MetricOperationDuration, "s",
		"GenAI operation duration: E2E latency, last SSE event of the response minus the request's first byte sent.", durationBuckets())
	in.timeToFirstChunk = hist(MetricTimeToFirstChunk, "s",
		"Time to receive the first chunk (SSE message of any kind) after the request's first byte was sent.", durationBuckets())
	in.timePerChunk = hist(MetricTimePerOutputChunk, "s",
		"Time per output chunk: ITL, one sample per gap between successive token-bearing SSE events.", perTokenBuckets())
	in.ttft = hist(MetricTTFT, "s",
		"TTFT: first SSE event carrying a generated token (answer or reasoning) minus the request's first byte sent.", durationBuckets())
	in.ttftIntended = hist(MetricTTFTIntended, "s",
		"TTFT (intended): first SSE event carrying a generated token minus when the schedule said to send the request (coordinated-omission safe).", durationBuckets())
	in.ttfo = hist(MetricTTFO, "s",
		"TTFO: first SSE event carrying answer (non-reasoning) text minus the request's first byte sent.", durationBuckets())
	in.tpot = hist(MetricTPOT, "s",
		"TPOT: (E2E - TTFT) / (output_tokens - 1), for output_tokens >= 2.", perTokenBuckets())
	in.scheduleLag = hist(MetricScheduleLag, "s",
		"Schedule lag: when the request's first byte was sent minus when the schedule said to send it.", scheduleLagBuckets())

	in.tokenUsage = check[metric.Int64Histogram](&errs, MetricTokenUsage)(m.Int64Histogram(MetricTokenUsage, metric.WithUnit("{token}"),
		metric.WithDescription("Number of input and output tokens used, per request."),
		metric.WithExplicitBucketBoundaries(tokenBuckets()...)))
	in.tokens = check[metric.Int64Counter](&errs, MetricTokens)(m.Int64Counter(MetricTokens, metric.WithUnit("{token}"),
		metric.WithDescription("Input and output tokens of measured requests (the sum of gen_ai.client.token.usage, as a counter).")))
	in.requests = check[metric.Int64Counter](&errs, MetricRequests)(m.Int64Counter(MetricRequests, metric.WithUnit("{request}"),
		metric.WithDescription("Scheduled requests by final state (ok, http_error, stream_error, timeout, cancelled, not_sent), warm-up included and labelled.")))
	in.gpuPower = check[metric.Float64Gauge](&errs, MetricGPUPower)(m.Float64Gauge(MetricGPUPower, metric.WithUnit("W"),
		metric.WithDescription("GPU-reported board power draw, as sampled (not facility power).")))
	in.gpuMemoryUsed = check[metric.Int64Gauge](&errs, MetricGPUMemoryUsed)(m.Int64Gauge(MetricGPUMemoryUsed, metric.WithUnit("By"),
		metric.WithDescription("GPU memory in use, as sampled.")))
	return in, errors.Join(errs...)
}

// check returns a function that passes an instrument through and appends its
// creation error, naming the instrument, to errs.
func check[T any](errs *[]error, name string) func(T, error) T {
	return func(v T, err error) T {
		if err != nil {
			*errs = append(*errs, fmt.Errorf("telemetry: instrument %s: %w", name, err))
		}
		return v
	}
}
