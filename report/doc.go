// Package report owns the results.json schema (versioned), the statistics
// computed from raw per-request records, the decision rule and verdicts, the
// canary comparison, and the Markdown and self-contained HTML reports.
//
// One file per concept:
//   - results.go, sections.go, stats.go, rule.go: the results.json schema
//     (cells, the measured sections, statistics, rule and verdicts);
//   - cell.go, metrics.go, dist.go: BuildCell summarises one arm × load ×
//     repetition from raw loadgen.Records (exact nearest-rank percentiles;
//     per-request formulas are loadgen.Record's methods);
//   - binomial.go: the order-statistic rule (MinSamples) and MLPerf
//     LoadGen's early stopping (EarlyStopping) that refuse percentile claims
//     a sample cannot support;
//   - failures.go: a cell whose measured requests did not end ok more often
//     than MaxNotOKShare (5 %) is Censored: FailureWarning names it, and
//     Analyze refuses its latency figures in every comparison (null + reason);
//   - order.go: RunOrder, the interleaved A B B A run order;
//   - bootstrap.go, analyze.go: Analyze, seeded bootstrap intervals over
//     repetitions, candidate/baseline ratios, capacity at SLO;
//   - verdict.go: the decision rule's clauses (a) validation, (b) no
//     regression of the rule metric beyond the margin (candidate/baseline
//     interval below 1 + margin), (c) VRAM budget, (d) reproducibility; only
//     declared clauses decide; a verdict notes client-bound cells;
//   - bisect.go: FindCapacity, bisection of the offered load;
//   - compare.go, io.go: Compare of two results.json, reading and writing them;
//   - markdown.go, html.go, plots.go: report.md and report.html (inline SVG
//     from gonum/plot; no script, no network).
//
// It reads records and the sections the caller converts from the amdahl,
// energy, cost and integrate packages; it does not know how records were
// made, which server ran, how energy was sampled or where prices came from.
package report
