// Package loadgen is the instrument: it replays a traces.Schedule against an
// OpenAI-compatible Server open-loop (or closed-loop, labelled so), paced
// through vegeta's Pacer interface, reads each streamed response over SSE,
// stamps every token event with the monotonic clock when its bytes reach the
// reader, and emits exactly one Record per scheduled request to a Sink.
//
// Metric definitions follow DESIGN.md "Metric definitions" exactly.
// It does not know which server it talks to, GPUs, or statistics beyond
// per-request metrics and HDR histograms.
package loadgen
