package telemetry

import (
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// SemconvVersion is the OpenTelemetry semantic conventions release whose
// GenAI names this package follows (v1.41.0 is the last release that carries
// the GenAI conventions in the main repository; later ones moved them to
// open-telemetry/semantic-conventions-genai). Its schema URL is set on the
// tracer and the meter.
const SemconvVersion = "v1.41.0"

// InstrumentationName is the instrumentation scope of every span and metric.
const InstrumentationName = "github.com/transferlab/transferlab/telemetry"

// Metric names. GenAI ones are the semantic conventions' (SemconvVersion);
// the rest carry the transferlab. prefix because the conventions define no
// client-side equivalent. All durations are in seconds (unit "s"), as the
// conventions require; README.md has the full table with sources.
const (
	// MetricOperationDuration is E2E latency: last SSE event − sent_at (DESIGN.md).
	MetricOperationDuration = "gen_ai.client.operation.duration"
	// MetricTimeToFirstChunk is first SSE message of any kind − sent_at, the
	// conventions' time to first chunk (role-only and empty chunks count).
	MetricTimeToFirstChunk = "gen_ai.client.operation.time_to_first_chunk"
	// MetricTimePerOutputChunk is ITL: one sample per gap between successive
	// token-bearing events (DESIGN.md); a chunk without output is not an output chunk.
	MetricTimePerOutputChunk = "gen_ai.client.operation.time_per_output_chunk"
	// MetricTokenUsage is the tokens of one request, by gen_ai.token.type.
	MetricTokenUsage = "gen_ai.client.token.usage"

	// MetricTTFT is TTFT: first token-bearing event (answer or reasoning) − sent_at.
	MetricTTFT = "transferlab.client.time_to_first_token"
	// MetricTTFTIntended is TTFT (intended): first token-bearing event −
	// scheduled_at, coordinated-omission safe (MLPerf LoadGen, wrk2).
	MetricTTFTIntended = "transferlab.client.time_to_first_token.intended"
	// MetricTTFO is TTFO: first event with answer (non-reasoning) text − sent_at.
	MetricTTFO = "transferlab.client.time_to_first_answer_token"
	// MetricTPOT is TPOT: (E2E − TTFT) / (output_tokens − 1), output_tokens ≥ 2.
	MetricTPOT = "transferlab.client.time_per_output_token"
	// MetricScheduleLag is sent_at − scheduled_at.
	MetricScheduleLag = "transferlab.client.schedule_lag"
	// MetricTokens counts tokens (monotonic), by gen_ai.token.type.
	MetricTokens = "transferlab.client.tokens"
	// MetricRequests counts finished requests by final state, warm-up included.
	MetricRequests = "transferlab.client.requests"
	// MetricGPUPower is the GPU's board power draw in watts, as sampled (GPU-reported).
	MetricGPUPower = "transferlab.gpu.power"
	// MetricGPUMemoryUsed is the GPU memory in use in bytes, as sampled.
	MetricGPUMemoryUsed = "transferlab.gpu.memory.used"
)

// Span names.
const (
	// SpanRun is the root span of one run.
	SpanRun = "transferlab.run"
	// SpanCell is the span of one arm × offered load × repetition.
	SpanCell = "transferlab.cell"
	// A request's span is named "{gen_ai.operation.name} {gen_ai.request.model}"
	// as the GenAI span conventions ask (just the operation name without a model).

	// EventFirstToken marks the first token-bearing event of a request.
	EventFirstToken = "transferlab.first_token"
	// EventFirstAnswerToken marks the first answer-text event when it comes
	// after reasoning tokens (absent when it is the first token event).
	EventFirstAnswerToken = "transferlab.first_answer_token"
	// EventEnd marks the last event of the response ([DONE] or final usage),
	// or the last thing seen from a request that did not finish.
	EventEnd = "transferlab.end"
)

// Attribute keys. GenAI and general keys come from the semantic conventions
// package so a typo cannot compile; ours carry the transferlab. prefix.
const (
	AttrOperationName    = semconv.GenAIOperationNameKey // gen_ai.operation.name
	AttrProviderName     = semconv.GenAIProviderNameKey  // gen_ai.provider.name
	AttrRequestModel     = semconv.GenAIRequestModelKey  // gen_ai.request.model
	AttrTokenType        = semconv.GenAITokenTypeKey     // gen_ai.token.type: input | output
	AttrInputTokens      = semconv.GenAIUsageInputTokensKey
	AttrOutputTokens     = semconv.GenAIUsageOutputTokensKey
	AttrMaxTokens        = semconv.GenAIRequestMaxTokensKey
	AttrStream           = semconv.GenAIRequestStreamKey
	AttrTimeToFirstChunk = semconv.GenAIResponseTimeToFirstChunkKey // seconds, on the span
	AttrErrorType        = semconv.ErrorTypeKey                     // error.type: the final state when not ok
	AttrHTTPStatus       = semconv.HTTPResponseStatusCodeKey
	AttrFinishReasons    = semconv.GenAIResponseFinishReasonsKey // string array: the record's finish_reason

	AttrArm            = attribute.Key("transferlab.arm")
	AttrOfferedLoadRPS = attribute.Key("transferlab.offered_load_rps") // requests per second
	AttrRepetition     = attribute.Key("transferlab.repetition")
	AttrRequestID      = attribute.Key("transferlab.request.id")
	AttrSourceLine     = attribute.Key("transferlab.trace.source_line")
	AttrState          = attribute.Key("transferlab.request.state")
	AttrWarmup         = attribute.Key("transferlab.warmup")
	AttrSimulated      = attribute.Key("transferlab.simulated")
	AttrRunName        = attribute.Key("transferlab.run.name")
	AttrConfigSHA256   = attribute.Key("transferlab.config.sha256")
	AttrScheduleLagS   = attribute.Key("transferlab.schedule_lag_s")
	AttrOutputSource   = attribute.Key("transferlab.output_tokens.source") // usage | events
	AttrUsageMismatch  = attribute.Key("transferlab.usage_mismatch")
	AttrGPUIndex       = attribute.Key("transferlab.gpu.index")
	AttrEventTokens    = attribute.Key("transferlab.event.tokens")
)

// Histogram bucket boundaries (explicit aggregation), fresh slices on each call. The conventions advise
// durationBuckets for gen_ai.client.operation.duration and
// time_to_first_chunk, perTokenBuckets for time_per_output_chunk (and the
// server's time_per_output_token), tokenBuckets for token.usage. Ours reuse
// the closest advised set; schedule lag, which should be well under a
// millisecond, gets its own from 10 µs to 1 s.
func durationBuckets() []float64 {
	return []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
}

func perTokenBuckets() []float64 {
	return []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5}
}

func tokenBuckets() []float64 {
	return []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
}

func scheduleLagBuckets() []float64 {
	return []float64{0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}
}
