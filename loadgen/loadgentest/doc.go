// Package loadgentest provides a minimal, fast OpenAI-compatible streaming
// server for testing and benchmarking the loadgen client (as net/http/httptest
// does for HTTP): POST /v1/completions and /v1/chat/completions, streamed
// (one token per SSE event, a usage-only final chunk when
// stream_options.include_usage is asked for, [DONE]) or not, with a
// scripted time to first token and inter-token gap, and GET /health.
//
// It is a raw-TCP HTTP/1.1 server, not net/http, so that it costs a client
// sharing its machine as little CPU as possible: one goroutine per
// connection, the request head parsed by hand (Content-Length or chunked
// bodies, Expect: 100-continue, keep-alive, HTTP/1.0, Connection: close, a
// 10 s limit on reading a head and then a body), and each token event sent
// with one Write of a pre-encoded chunk (Config.EventsPerWrite groups them).
// Errors are 4xx/5xx answers with a JSON body {"error":{"message":…}}.
//
// It keeps invariants the client must respect (each X-Request-Id at most
// once; stream_options.include_usage asked for) and counts violations.
// It does not model a GPU, batching or queueing: that is the sim package.
// It does not speak HTTP/2 or TLS, nor pipeline responses out of order.
package loadgentest
