package render

import (
	"fmt"
	"strings"

	"github.com/transferlab/transferlab/analysis"
	"github.com/transferlab/transferlab/report"
)

// Headline is the buyer's one-line summary: each candidate's capacity gain at
// the SLO with its interval, or why there is none. An incomplete run says so
// first, naming the planned cells that did not run and those cut short.
func Headline(r report.Results) string {
	h := capacityHeadline(r)
	if r.Simulated {
		h += " (simulated)"
	}
	if note := analysis.CensoredNote(r); note != "" {
		h = note + ". " + h
	}
	if r.Complete {
		return h
	}
	var parts []string
	if nr := report.CellsNotRun(r); len(nr) > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d planned cells not run: %s", len(nr), len(r.RunOrder), report.KeysText(nr)))
	}
	if cs := report.CellsCutShort(r); len(cs) > 0 {
		parts = append(parts, "cut short and left out: "+report.KeysText(cs))
	}
	if len(parts) == 0 {
		parts = append(parts, report.OrText(r.IncompleteReason, "no reason recorded"))
	}
	return "incomplete run: " + strings.Join(parts, "; ") + ". " + h
}

// capacityHeadline is the capacity part of Headline.
func capacityHeadline(r report.Results) string {
	if cs := r.CapacitySearch; cs != nil && cs.NotRun == "" && len(cs.Gains) > 0 {
		s := make([]string, len(cs.Gains))
		for i, g := range cs.Gains {
			s[i] = "capacity at SLO of " + g.Candidate + " vs " + g.Baseline + " (" + searchHow(*cs) + "): " + searchGainText(g)
		}
		return strings.Join(s, "; ")
	}
	if cs := r.CapacitySearch; cs != nil && cs.Interrupted != "" {
		return "capacity at SLO not found: the search was " + cs.Interrupted
	}
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
		s[i] = "capacity at SLO of " + g.Candidate + " vs " + g.Baseline + ": " + report.EstimateText(g.Gain, "×")
	}
	return strings.Join(s, "; ")
}
