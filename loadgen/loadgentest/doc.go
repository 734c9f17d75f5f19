// Package loadgentest provides a minimal, fast OpenAI-compatible streaming
// server for testing and benchmarking the loadgen client (as net/http/httptest
// does for HTTP): POST /v1/completions and /v1/chat/completions, streamed
// (one token per SSE event, a usage-only final chunk, [DONE]) or not, with a
// scripted time to first token and inter-token gap, and GET /health.
//
// It keeps invariants the client must respect (each X-Request-Id at most
// once; stream_options.include_usage asked for) and counts violations.
// It does not model a GPU, batching or queueing: that is the sim package.
package loadgentest
