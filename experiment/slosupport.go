package experiment

import (
	"fmt"
	"strings"
	"time"

	"github.com/transferlab/transferlab/report"
	"github.com/transferlab/transferlab/stats"
	"github.com/transferlab/transferlab/traces"
)

// measuredRequests is how many of s's requests a cell measures: those
// scheduled at or after warmup (loadgen marks the ones before it Warmup).
func measuredRequests(s traces.Schedule, warmup time.Duration) int {
	n := 0
	for _, q := range s.Requests {
		if q.Offset >= warmup {
			n++
		}
	}
	return n
}

// sloSupport checks, before anything is sent, that every sweep cell of eff
// (an effective config; scheds its loads' unsliced schedules) can support a
// claim at the SLO percentile: a cell measures at most its measured
// requests, and the report refuses a percentile claim below the
// order-statistic rule's minimum (stats.MinSamples at
// stats.DefaultConfidence: p90 needs 44, p99 459), so such a cell's SLO
// claims are refused and the capacity read from the swept loads is unknown.
// nil when every cell can, or no SLO target is declared; else a
// `slo.percentile (line N): message` error naming the loads that cannot,
// their requests, and what would fix it.
func sloSupport(eff Config, scheds []traces.Schedule) error {
	s := eff.SLO
	if !(s.TTFTMs > 0 || s.TPOTMs > 0 || s.E2EMs > 0) {
		return nil
	}
	p, how := s.Percentile, ""
	if p == 0 {
		p = report.DefaultSLOPercentile
	}
	if eff.lines != nil {
		if _, set := eff.lines.Line("slo.percentile"); !set {
			how = " (the default)"
		}
	}
	need, err := stats.MinSamples(p/100, stats.DefaultConfidence)
	if err != nil {
		return nil // Validate refuses such a percentile
	}
	var short []string
	capped := false
	for i, sc := range scheds {
		if n := measuredRequests(sc, eff.Load.Warmup); n < need && i < len(eff.Load.RatesRPS) {
			short = append(short, fmt.Sprintf("%d at %g req/s", n, eff.Load.RatesRPS[i]))
			capped = capped || (eff.Load.MaxRequests > 0 && len(sc.Requests) == eff.Load.MaxRequests)
		}
	}
	if len(short) == 0 {
		return nil
	}
	fix := "lengthen load.duration or raise the loads"
	if p > 90 {
		n90, _ := stats.MinSamples(0.9, stats.DefaultConfidence)
		fix = fmt.Sprintf("lower slo.percentile (p90 needs ≥ %d) or lengthen load.duration", n90)
	}
	if capped {
		fix += " (load.max_requests caps a cell: raise it with them)"
	}
	return eff.fieldError("slo.percentile", fmt.Errorf("p%g%s needs ≥ %d measured requests per cell at %g %% confidence (the report's order-statistic rule), and %d of %d offered loads' cells measure fewer (%s): their p%g SLO claims will be refused, and the capacity read from the swept loads unknown; %s",
		p, how, need, 100*stats.DefaultConfidence, len(short), len(scheds), strings.Join(short, ", "), p, fix))
}

// decisionSupport checks, before anything is sent, that the decision rule's
// statistic can be compared at every load: a verdict compares candidate and
// baseline request by request, pooled over the repetitions, and the
// comparison of a percentile is refused below the order-statistic rule's
// minimum (stats.MinSamples at stats.DefaultConfidence), of a mean below a
// p50's (analysis: a mean is compared only where a p50 could be claimed).
// The most pairs a load can give are its cells' measured requests times
// the repetitions. nil without a candidate (no verdict); else a
// `decision.percentile (line N): message` error naming the loads that
// cannot, and what would fix it.
func decisionSupport(eff Config, scheds []traces.Schedule) error {
	cands := 0
	for _, a := range eff.Arms[min(1, len(eff.Arms)):] {
		if !a.IsCeiling() {
			cands++
		}
	}
	if cands == 0 {
		return nil
	}
	rule := eff.Extra.Decision.rule(eff.Arms[0].Name, eff.Seed)
	if rule.UseMean {
		return nil // a mean needs a p50's 7 pairs: every cell that measures anything gives them
	}
	need, err := stats.MinSamples(rule.Percentile/100, stats.DefaultConfidence)
	if err != nil {
		return nil // Validate refuses such a percentile
	}
	reps := max(eff.Repetitions, 1)
	var short []string
	for i, sc := range scheds {
		if n := reps * measuredRequests(sc, eff.Load.Warmup); n < need && i < len(eff.Load.RatesRPS) {
			short = append(short, fmt.Sprintf("%d at %g req/s", n, eff.Load.RatesRPS[i]))
		}
	}
	if len(short) == 0 {
		return nil
	}
	how := ""
	if eff.Extra.Decision == nil || eff.Extra.Decision.Percentile == 0 {
		how = " (the default)"
	}
	return eff.fieldError("decision.percentile", fmt.Errorf("the verdict compares %s p%g%s request by request, which needs ≥ %d paired requests per load at %g %% confidence (the order-statistic rule), and %d of %d loads give fewer (measured requests × %d repetitions: %s): every verdict will be inconclusive; set decision.use_mean: true (a mean needs 7), or lengthen load.duration or add repetitions",
		rule.Metric, rule.Percentile, how, need, 100*stats.DefaultConfidence, len(short), len(scheds), reps, strings.Join(short, ", ")))
}
