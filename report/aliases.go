package report

// DefaultAliases maps our metric names to other tools' names for the same
// formula (DESIGN.md, "Metric definitions"), for Results.Aliases.
func DefaultAliases() map[string]string {
	return map[string]string{
		"ttft":          "TTFT in AIPerf, GenAI-Perf, GuideLLM, vLLM bench (measured from send)",
		"ttft_intended": "MLPerf LoadGen / wrk2 latency from the scheduled time (coordinated-omission safe)",
		"tpot":          "ITL in AIPerf, GenAI-Perf and GuideLLM; TPOT in vLLM bench",
		"itl":           "ICL in AIPerf; ITL in vLLM bench (one sample per gap between token events)",
		"e2e":           "request latency in AIPerf and GenAI-Perf; E2EL in vLLM bench",
		"ttfo":          "time to first answer (non-reasoning) token; TTFT where a tool ignores reasoning text",
	}
}

// Headline is the buyer's one-line summary: each candidate's capacity gain at
// the SLO with its interval, or why there is none.
func Headline(r Results) string {
	switch {
	case r.Stats == nil:
		return "no headline: the results were not analysed"
	case r.Stats.CapacityNotMeasured != "":
		return "no capacity headline: capacity not measured (" + r.Stats.CapacityNotMeasured + ")"
	case len(r.Stats.CapacityGain) == 0:
		return "no capacity headline: no candidate arm"
	}
	s := ""
	for i, g := range r.Stats.CapacityGain {
		if i > 0 {
			s += "; "
		}
		s += "capacity at SLO of " + g.Candidate + " vs " + g.Baseline + ": " + estimateText(g.Gain, "×")
	}
	if r.Simulated {
		s += " (simulated)"
	}
	return s
}
