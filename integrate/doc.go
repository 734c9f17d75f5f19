// Package integrate runs a real inference server for transferlab: it launches a
// server process by argv (never a shell) in its own process group, probes it for
// readiness, captures its log, tears the whole group down (SIGTERM, then SIGKILL
// after a grace period) and checks between arms that GPU memory went back to idle
// (Launch, Process, WaitGPUIdle).
//
// It embeds the Python side (python/, written out at run time):
//   - refserver.py, the pinned reference server: OpenAI-compatible streaming
//     /v1/completions on transformers' continuous-batching engine (aiohttp), with
//     /manifest, /hook/stats, /hook/window and a profiler window (/profile/start,
//     /profile/stop) (ReferenceConfig, ReferenceSpec);
//   - shim/, the kernel-override hook: a sitecustomize.py plus the tlhook package
//     (and entry-point metadata for vLLM's and SGLang's plugin groups), driven by an
//     override manifest named in $TRANSFERLAB_OVERRIDE_MANIFEST (Override);
//   - validate_gate.py, the validation gate run on the GPU (RunValidation), whose
//     hashed report CheckValidation enforces before any swap.
//
// Validate orchestrates one validation on the GPU machine: capture the shapes
// the reference server produces (closed-loop replay of a trace's first
// requests), a shadow run, the gate on the candidate and on the shipped
// negative controls (NegativeControls), and validation-summary.md.
//
// integrate does not know about offered load, schedules or statistics beyond
// that capture replay: the experiment runner replays load against a *Process
// through loadgen.Server, and reads energy from the energy package. It never imports energy: WaitGPUIdle takes a function that
// reads used GPU memory (NvidiaSMIUsed is one).
package integrate
