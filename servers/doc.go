// Package servers starts the server under test of one arm and tells what
// it is: the embedded simulator (sim), an already-running OpenAI-compatible
// server (endpoint), any server launched by argv (command), and the pinned
// reference server as a preset of command. Each kind starts, waits until it
// is ready, describes itself for the results manifest, gives the energy
// sampler and (where it can) the addressable fraction of a cell, and stops;
// Server is the one interface an experiment sees.
//
// It does not know the experiment's config file, schedules, run order or
// output files: the experiment picks the kind, hands each start what it
// needs (the arm's override, the server folder, the run's headers and
// scrubber) and records what Info returns. Launching itself (argv, process
// group, readiness, the kernel-override hook, teardown) is integrate's.
package servers
