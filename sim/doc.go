// Package sim is transferlab's embedded default server: an OpenAI-compatible
// HTTP server (POST /v1/completions, POST /v1/chat/completions, GET /v1/models,
// GET /health, GET /v1/profile, POST /v1/profile/reset, GET /v1/truth: the ground
// truth below as JSON lines, ns on its monotonic clock) whose responses are
// produced by a continuous-batching engine that runs step by step in real time.
//
// Each engine step's duration is the sum of per-op GPU costs from a roofline
// cost model of a Llama-3-8B-shaped model on an H200-like GPU, plus a fixed
// per-step CPU overhead (COSTMODEL.md gives every formula and constant with its
// source). A kernel override is a per-op speedup factor: the op's time is
// divided by it. An optional, seeded run-to-run noise model (Config.Noise,
// off by default) multiplies every step's time by a per-cell and a per-step
// log-normal factor, as two runs on a real GPU differ. Because the engine knows what really happened, it keeps
// per-request ground truth (arrival, admission, prefill steps, the time each
// token event was flushed) that transferlab's tests compare measurements with,
// and a profile (per-op GPU time split prefill/decode, GPU busy time, CPU
// overhead, active wall time) from which the Amdahl fraction f is computed.
//
// Every figure it produces is simulated.
//
// What sim does not know: the client (loadgen), traces, statistics, reports.
// It imports no transferlab package. It has no tokenizer and no weights: a
// prompt given as token ids counts exactly; a string counts one token per
// whitespace-separated word (strings.Fields). It never samples an
// end-of-sequence token, so every request generates exactly its max_tokens
// whether or not ignore_eos is set (finish_reason is always "length").
package sim
