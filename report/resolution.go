package report

import (
	"fmt"
	"math"
	"strings"
)

// AAArm names the A/A replicate of the baseline arm: the baseline's own
// server configuration run a second time in every block, interleaved like
// the arms (RunOrder), so the run measures how far the baseline moves
// against itself. "~" cannot appear in a configured arm name.
func AAArm(baseline string) string { return baseline + "~aa" }

// IsAAArm reports whether arm is some baseline's A/A replicate.
func IsAAArm(arm string) bool { return strings.HasSuffix(arm, "~aa") }

// Resolution is this run's noise floor for one metric statistic at one
// offered load: the A/A replicate against the baseline, compared as the
// candidates are.
type Resolution struct {
	OfferedLoadRPS float64 `json:"offered_load_rps"`
	Metric         string  `json:"metric"`
	Stat           string  `json:"stat"`
	// AA is A/A replicate / baseline with its interval (ideally 1).
	AA Estimate `json:"aa"`
	// PlusMinus is the resolution as a fraction: the farther end of AA's
	// interval from 1, max(|AA.Low − 1|, |AA.High − 1|). A candidate/baseline
	// ratio within 1 ± PlusMinus is no difference this run can detect.
	// Nil when the A/A comparison has no interval (AA.Note says why).
	PlusMinus *float64 `json:"plus_minus"`
	// Excluded says why the A/A comparison is suspect (a client-bound cell).
	Excluded string `json:"excluded,omitempty"`
}

// resolutionMethod says how Resolution and the widened ratio intervals are computed.
const resolutionMethod = "resolution = the farther end from 1 of the 95 % interval of A/A replicate / baseline " +
	"(the baseline run twice per block, interleaved like the arms, compared request by request as the candidates are); " +
	"each candidate/baseline interval is widened on both sides by the A/A point offset |ln(A/A)|, " +
	"the shift between two cells of one unchanged arm that a within-cell interval cannot see"

// resolutionOf builds the Resolution of aa (the A/A replicate's estimate).
func resolutionOf(load float64, metric, stat string, aa Estimate) Resolution {
	res := Resolution{OfferedLoadRPS: load, Metric: metric, Stat: stat, AA: aa}
	if aa.Interval {
		res.PlusMinus = ptr(max(math.Abs(aa.Low-1), math.Abs(aa.High-1)))
	}
	return res
}

// widen widens e's interval by the A/A replicate's point offset: by the
// factor exp(|ln aa|) on each side. An A/A ratio of 1.02 says two cells of
// the same arm differed by 2 % between them; a candidate's interval over
// requests inside its own cells cannot see that shift, so it is added.
func widen(e Estimate, aa float64) Estimate {
	if !e.Interval || !(aa > 0) {
		return e
	}
	f := math.Exp(math.Abs(math.Log(aa)))
	e.Low, e.High = e.Low/f, e.High*f
	return e
}

// ResolutionText is "±1.2 %" for a resolution fraction, or "not measured".
func ResolutionText(pm *float64) string {
	if pm == nil {
		return "not measured"
	}
	return "±" + pctOf(*pm)
}

// pctOf is a fraction as a percentage with enough digits to tell small ones apart: "0.42 %".
func pctOf(f float64) string {
	v := 100 * f
	switch {
	case v >= 10:
		return fmt.Sprintf("%.0f %%", v)
	case v >= 1:
		return fmt.Sprintf("%.1f %%", v)
	}
	return fmt.Sprintf("%.2f %%", v)
}

// excludedNote says why a comparison at one load feeds no verdict: a
// client-bound cell among groups (the client, not the server, may have set
// the pace; each cell's figure is in its warning). "" when none is.
func excludedNote(groups ...group) string {
	var flagged []string
	for _, g := range groups {
		for _, c := range g.cells {
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
