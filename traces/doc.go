// Package traces reads public LLM inference request traces, normalises them
// to one Schedule, transforms schedules and builds synthetic arrivals.
//
// Readers (format detected from the header by column names, never by
// position; ReadOptions.Format overrides):
//
//   - azure: Azure LLM inference 2023 (TIMESTAMP,ContextTokens,GeneratedTokens;
//     CRLF, 7-digit fractions, no zone, no final newline) and the 2024
//     week-long layout (+00:00 offsets, 6 digits, whole seconds without a
//     fraction). Absolute datetimes become offsets from the earliest row.
//   - vidur: microsoft/vidur's re-expression (arrived_at seconds, binary float
//     noise parsed exactly to the ns).
//   - mooncake: Mooncake FAST'25 JSONL (integer ms, duplicated timestamps kept
//     as bursts, hash_ids → Request.PrefixBlocks and PrefixGroup).
//   - burstgpt: BurstGPT CSV (Timestamp seconds, Request/Response tokens);
//     failed requests (0 response tokens) are dropped and counted in
//     Schedule.Dropped, or kept as 1-token requests with ReadOptions.KeepFailed.
//   - csv / jsonl: any trace whose columns a Mapping names, with the time unit.
//
// Policies, each tested: gzip-compressed files are read transparently (the
// SHA-256 is of the stored bytes); a UTF-8 BOM, CRLF, and blank lines before a
// CSV's header or after its last row (anywhere in JSONL) are accepted, while a
// blank line between a CSV's header and its last row is a bad row
// (blank_line: a hole in the data, such as a lost row or files pasted
// together, is not layout); unsorted rows are sorted stably by time and counted in
// Schedule.Reordered; zero input or output tokens are bad rows (a request
// needs ≥ 1 of each); huge contexts are kept (ClampContext fits them to a
// server). A bad row is an error naming file, line and field (*RowError), or
// with ReadOptions.Lenient is skipped and counted by reason. Every Schedule
// carries the SHA-256 of the bytes it was read from.
//
// Transforms (ScaleToRate, First, ClampContext, Shard) return new Schedules
// with IDs renumbered and each step appended to Schedule.Transforms. Synthetic draws constant, Poisson or Gamma
// arrivals (gonum stat/distuv, seeded). ComputeStats summarises a Schedule.
//
// It does not know HTTP, servers, pacing or load generation: a Schedule is data.
package traces
