// Package analysis computes every figure of a run from raw per-request
// records and the sections the caller converts: BuildCell summarises one
// arm × load × repetition (cell.go, metrics.go, dist.go: exact nearest-rank
// percentiles, SLO claims with MLPerf LoadGen's early stopping in
// earlystop.go); failures.go censors cells whose measured requests did not
// end ok more often than MaxNotOKShare; Analyze (analyze.go) computes the
// statistics over repetitions with seeded bootstrap intervals (bootstrap.go),
// request-by-request ratios (paired.go), the resolution from the A/A
// replicate (resolution.go), capacity at SLO over the swept loads and its
// gain, the Amdahl table and the ablation (ablation.go), and the verdicts of
// the decision rule (verdict.go); capsearch.go is Search, the search of the
// offered load for capacity at SLO (the next load, the bracket, its interval,
// the capacity gain), whose probes experiment runs.
//
// It writes its results into report's schema and prints nothing: it does not
// know how report.md or report.html look (render), how two runs are compared
// (canary), how records were made or which server ran.
package analysis
