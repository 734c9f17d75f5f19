package report

import (
	"fmt"
	"strings"
)

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
// the SLO with its interval, or why there is none. An incomplete run says so
// first, naming the planned cells that did not run and those cut short.
func Headline(r Results) string {
	h := capacityHeadline(r)
	if r.Simulated {
		h += " (simulated)"
	}
	if note := censoredNote(r); note != "" {
		h = note + ". " + h
	}
	if r.Complete {
		return h
	}
	var parts []string
	if nr := CellsNotRun(r); len(nr) > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d planned cells not run: %s", len(nr), len(r.RunOrder), keysText(nr)))
	}
	if cs := cellsCutShort(r); len(cs) > 0 {
		parts = append(parts, "cut short and left out: "+keysText(cs))
	}
	if len(parts) == 0 {
		parts = append(parts, orText(r.IncompleteReason, "no reason recorded"))
	}
	return "incomplete run: " + strings.Join(parts, "; ") + ". " + h
}

// capacityHeadline is the capacity part of Headline.
func capacityHeadline(r Results) string {
	switch {
	case r.Stats == nil:
		return "no headline: the results were not analysed"
	case r.Stats.CapacityNotMeasured != "":
		return "no capacity headline: capacity not measured (" + r.Stats.CapacityNotMeasured + ")"
	case len(r.Stats.CapacityGain) == 0:
		return "no capacity headline: no candidate arm"
	}
	s := make([]string, len(r.Stats.CapacityGain))
	for i, g := range r.Stats.CapacityGain {
		s[i] = "capacity at SLO of " + g.Candidate + " vs " + g.Baseline + ": " + estimateText(g.Gain, "×")
	}
	return strings.Join(s, "; ")
}
