package analysis

import (
	"fmt"
	"math"
	"strings"

	"github.com/transferlab/transferlab/report"
)

// resolutionMethod says how Resolution and the widened ratio intervals are computed.
const resolutionMethod = "resolution = the farther end from 1 of the 95 % interval of A/A replicate / baseline " +
	"(the baseline run twice per block, interleaved like the arms, compared request by request as the candidates are); " +
	"each candidate/baseline interval is widened on both sides by the A/A point offset |ln(A/A)|, " +
	"the shift between two cells of one unchanged arm that a within-cell interval cannot see"

// resolutionOf builds the Resolution of aa (the A/A replicate's estimate).
func resolutionOf(load float64, metric, stat string, aa report.Estimate) report.Resolution {
	res := report.Resolution{OfferedLoadRPS: load, Metric: metric, Stat: stat, AA: aa}
	if aa.Interval {
		res.PlusMinus = ptr(max(math.Abs(aa.Low-1), math.Abs(aa.High-1)))
	}
	return res
}

// widen widens e's interval by the A/A replicate's point offset: by the
// factor exp(|ln aa|) on each side. An A/A ratio of 1.02 says two cells of
// the same arm differed by 2 % between them; a candidate's interval over
// requests inside its own cells cannot see that shift, so it is added.
func widen(e report.Estimate, aa float64) report.Estimate {
	if !e.Interval || !(aa > 0) {
		return e
	}
	f := math.Exp(math.Abs(math.Log(aa)))
	e.Low, e.High = e.Low/f, e.High*f
	return e
}

// excludedNote says why a comparison at one load feeds no verdict: a
// client-bound cell among groups (the client, not the server, may have set
// the pace; each cell's figure is in its warning). "" when none is.
func excludedNote(groups ...Group) string {
	var flagged []string
	for _, g := range groups {
		for _, c := range g.Cells {
			if c.ClientBound {
				flagged = append(flagged, fmt.Sprintf("%s rep %d", c.Arm, c.Repetition))
			}
		}
	}
	if len(flagged) == 0 {
		return ""
	}
	return "client-bound: " + strings.Join(flagged, ", ")
}
