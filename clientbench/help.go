package clientbench

// Help is the bench-client command's help: what it runs and reports, how
// its flags are checked and what an interrupted or failed run still gives.
// It stands beside the code it describes (Run, Options.AddFlags) so the
// two change together.
const Help = `bench-client runs transferlab's client against a minimal fast OpenAI-compatible
SSE server (loadgen/loadgentest; by default a child process of this binary, so
the client's CPU and memory are measured alone; --in-process to share the
process) and reports:
  - per offered load: achieved send rate, SSE token events/s, schedule lag p99,
    client CPU time per 1,000 events, and whether lag p99 stayed ≤ 1 ms;
  - the highest rate sustained with lag p99 ≤ 1 ms and every request ok;
  - memory per in-flight streaming request (heap+stack, and RSS);
  - pacing at the vegeta comparison rate: send-rate error and sends per 10 ms bin;
  - vegeta's own attacker vs our client on the same non-streaming endpoint,
    with the ratios;
  - optionally a long non-streaming replay's peak RSS (--replay-requests);
  - ITL accuracy (--itl-rate, default 500 req/s; 0 skips): per client, a fresh
    simulator (transferlab serve-sim as a child process; --in-process: in this
    process) streams 32-token prompts / 16-token answers at the rate, and each
    measured ITL is compared with the simulator's true gap between the same
    two token events' flushes (GET /v1/truth): error p50/p99/max in µs, the
    TTFT error likewise, and event-count mismatches counted; --pin pins the
    child to the last CPU and this process to the others;
  - against serve-sim (stage sim, --sim-rates): per offered load, a fresh
    simulator child (ops --sim-speedup × faster, raised batch limits or
    --sim-config) streams 32-token prompts / 128-token answers; schedule and
    dispatch lag p99, the share of sends > 1 ms late, cores used, ITL and TTFT
    error vs the simulator's truth, the simulator's own cores, write lag and
    queue (from its truth, so a row says whether the server fell behind), and
    the highest rate sustained beside the fake server's, by one criterion for
    both (lag p99 ≤ 1 ms, all ok), with the highest of those at which the ITL
    error p99 was within --sim-stamp-accuracy;
  - head-of-line isolation (stage hol): every --hol-every-th stream carries a
    --hol-bytes SSE line, of each kind in --hol-lines in turn (a comment
    line, a data event); the other streams' token-gap error against the
    server's 20 ms, all, and split in the same run into the gaps that overlap
    a long line's time on the wire and in the reader and those that overlap
    none.
--stages picks stages; --server-cpus pins the server children (run bench-client
itself under taskset for its own CPUs).
Figures describe this machine's client, never a server under test.

Every flag is checked before anything runs (exit 1 naming the flag), --json-out
included (the file must be writable). An interrupt (exit 130 on SIGINT, 143 on
SIGTERM: 128 + the signal's number) or a stage that fails (exit 2: run
incomplete) still prints the table, and writes --json-out,
with every stage finished before it and the whole units of the one cut short,
marked INCOMPLETE with each stage's status; figures of stages that did not run
read "not measured" (null in JSON), and no target is called met without a
measurement. The table (or --json) is printed before --json-out is written.`
