// Package experiment wires one transferlab experiment end to end: it reads the
// YAML config, builds a schedule per offered load from a trace, starts the
// server under test for each arm (the embedded simulator or a launched
// process), replays each cell open-loop, samples energy, and hands the
// per-request records, profiles and energy windows to amdahl, cost and report.
//
// Data flows one way: trace → schedule → load → records → report. It owns no
// measurement logic of its own; every formula lives in the package that owns
// the concept.
package experiment
