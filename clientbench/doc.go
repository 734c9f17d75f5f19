// Package clientbench measures the load generator itself (transferlab
// bench-client): per client (loadgen's epoll reactor and net/http, side by
// side), the highest rate sustained at schedule-lag p99 ≤ 1 ms against a fast
// fake server (loadgen/loadgentest) and against the simulator (package sim,
// serve-sim's server), memory per in-flight stream (bytes), pacing against
// vegeta's attacker, a long replay's peak RSS, ITL and TTFT error against the
// simulator's ground truth (GET /v1/truth, µs), and head-of-line isolation.
//
// Servers run as child processes of the same binary (Command with the hidden
// flags AddFlags registers; pinned to other CPUs with --server-cpus) so the
// client's CPU and memory are measured alone; --in-process runs them inside.
// Files: clientbench.go (options, stages, the fast-server and replay children,
// the report and its table), sim.go (the sweep against serve-sim's simulator
// and the head-of-line check), itl.go (ITL accuracy), pin_*.go (CPU pinning).
//
// It does not know the lab's experiments, arms, reports or statistics beyond
// its own figures; its numbers describe this machine's client, never a
// server under test.
package clientbench
