// Package report owns the results.json schema (versioned), the statistics
// computed from raw per-request records (exact percentiles, bootstrap
// confidence intervals over repetitions), the decision rule and verdicts,
// and the Markdown and self-contained HTML reports.
//
// It reads records; it does not know how they were made.
package report
