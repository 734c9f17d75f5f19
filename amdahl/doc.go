// Package amdahl computes the addressable fraction f of a target op from
// profiles of the baseline server, aggregates a kernel's isolated speedup s
// from its per-shape validation table, and compares the service-level speedup
// that was measured with Amdahl's bound 1/((1−f)+f/s) (DESIGN.md,
// "Addressable fraction").
//
// What it owns:
//   - Bound and TransferEfficiency, the two formulas;
//   - interval arithmetic on one clock (Interval, Union, Intersect, Subtract):
//     GPU busy time is the length of the union of kernel intervals across
//     streams, so overlap counts once;
//   - Fractions: f_gpu = target GPU time / busy time, f_wall = target GPU time
//     / active wall time (time with ≥ 1 request in flight), f_excl = target
//     time not overlapped by any other GPU work / active wall time (a lower
//     bound), per phase where the profile tells prefill from decode;
//   - readers for three profile inputs: the hook's own CUDA-event timings
//     (HOOK_TIMINGS.md), PyTorch profiler Chrome-trace JSON (ParseChrome) and
//     Nsight Systems SQLite exports (ReadNsys), plus FromTotals for the
//     simulated server's per-op totals;
//   - attribution of GPU work to the target (PROFILES.md): target ranges on
//     the GPU or CPU side (record_function / NVTX), correlation ids, and, for
//     CUDA-graph replays that link to no op, kernel-name patterns or kernel
//     sequences (an op made of generic kernels, like eager RMSNorm);
//   - Summarize, what `transferlab profile` prints: one file's fractions,
//     per-window samples and f's interval;
//   - uncertainty: seeded bootstrap intervals for f (over profiled windows),
//     s (over shapes) and the bound (both), and the verdict of a measured
//     speedup (Compare: inside / below / above, with transfer efficiency);
//     the report measures the speedups and builds its Amdahl table itself.
//
// What it does not know: how profiles were taken, which server ran, how
// requests were sent or recorded (callers pass active intervals as plain
// values), and how the report renders. It imports no
// transferlab package but stats (the percentile definition and the seeded
// percentile-bootstrap mechanics it shares with analysis).
package amdahl
