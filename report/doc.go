// Package report owns the results.json schema (versioned): the types a run
// writes (results.go, sections.go, stats.go, rule.go), how a missing figure
// is written (null, nulls.go), the interleaved run order (order.go), the arm
// names the schema gives the A/A replicate and the ceiling (arms.go), the
// metric aliases (aliases.go), reading and atomic writing (io.go) with the
// finiteness check (finite.go), and the text form of its figures (text.go:
// numbers, estimates, intervals, resolutions) that analysis's notes and
// render's pages share so both print a figure one way, and the keys in which
// two runs' recorded configs differ (configdiff.go: ConfigKeyDiffs, secrets
// never shown), which compare and run --resume both name.
//
// It computes no statistic and renders no page: analysis fills Stats and
// Verdicts, render prints them, canary compares two results. It does not know
// how records were made, which server ran, or how a figure was computed.
package report
