// Package loadgen is the instrument: it replays a traces.Schedule against an
// OpenAI-compatible Server open-loop (or closed-loop, labelled so), paced
// through vegeta's Pacer interface, reads each streamed response over SSE,
// stamps every token event with the monotonic clock when its bytes reached the
// client (the kernel's receive time on the reactor, else when the read
// returned; DESIGN.md "Metric definitions"), and emits exactly one Record per scheduled request to a Sink.
//
// Metric definitions follow DESIGN.md "Metric definitions" exactly; the
// Record methods (TTFT, TTFTIntended, TTFO, FirstMessage, E2E, ITLs, TPOT,
// ScheduleLag, DispatchLag) implement them and Undefined says why one is not
// defined. Files: replay.go (dispatch: open loop, in-flight cap, closed
// loop), client.go (requests, streaming and non-streaming responses),
// reactor_linux.go and push.go (the default client for plain http:// targets
// on Linux: an epoll event loop driving every in-flight request as a state
// machine, no goroutine per request; target.go and head.go hold its
// request target and response-head parser; net/http serves https://, other
// systems and WithHTTPClient), eventlog.go (compact in-flight token events),
// sse.go (SSE framing), chunk.go and chunk_scan.go (dialect-tolerant chunk
// decoding), chunk_memo.go (a stream's payloads that differ only in their
// text, decoded without a scan), pacer_*.go, record.go, summary.go, histogram.go, jsonl.go,
// sinks.go. loadgentest holds a fast fake server for tests and bench-client.
//
// It does not know which server it talks to (sim, vLLM, SGLang, TGI,
// llama.cpp, Ollama look alike here), GPUs, energy, or statistics beyond
// per-request metrics, the run's Summary and HDR histograms.
package loadgen
