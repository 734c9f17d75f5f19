// Package shard splits one run over several load processes and merges them
// back without loss.
//
// A shard i of N replays the requests of every cell's schedule whose index k
// satisfies k mod N == i (traces.Shard: ids and offsets kept), so each shard
// offers the same load shape at 1/N of the rate and the shards together send
// exactly the unsplit schedule. All shards start each cell on one timetable
// fixed by a shared absolute start time (Timetable), estimate their wall-clock
// offset against a reference (Clock, an NTP-style minimum-delay filter), and
// write their own output folder: the run's records.jsonl and results.json,
// plus shard.json (the shard, the unsplit schedules' fingerprints, the clock,
// each cell's start and what it measured beyond its records) and hdr.log
// (per-cell HDR histograms in hdrhistogram-go's interval log format, one
// range and precision for every shard: loadgen.NewHistograms).
//
// Merge checks that the shards belong to one run (same config, trace, seed,
// code, run order, shard count, start time) and together cover every
// scheduled request exactly once, shifts each shard's record times onto one
// clock, and rebuilds records.jsonl, results.json and the reports with
// experiment.Rebuild, the code `run` uses: percentiles are exact, from the
// merged records. Server-side figures (profile, energy, server manifest) come
// from shard 0, the one shard that reads them from the shared server, never a
// sum over shards.
//
// The package knows neither Kubernetes (package k8s prints the Job) nor HTTP.
package shard
