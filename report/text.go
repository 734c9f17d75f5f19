package report

import (
	"fmt"
	"math"
	"strings"
)

// undefinedText says why an Estimate has no value: its Note when the note
// already says "refused"/"not measured"/"unknown"/"undefined", else "not measured (note)".
func UndefinedText(e Estimate) string {
	for _, p := range []string{"refused", "not measured", "unknown", "undefined"} {
		if strings.HasPrefix(e.Note, p) {
			return e.Note
		}
	}
	return "not measured (" + OrText(e.Note, "no reason recorded") + ")"
}

// estimateText formats value, unit and interval, or why the estimate is undefined.
func EstimateText(e Estimate, unit string) string {
	if e.Reps == 0 {
		return UndefinedText(e)
	}
	return Num(e.Value) + unit + " " + Interval(e)
}

// interval formats an Estimate's interval or the reason it has none.
func Interval(e Estimate) string {
	if e.Reps == 0 {
		return "none (no value)"
	}
	if !e.Interval {
		return "no interval: " + OrText(e.Note, "too few repetitions")
	}
	return "[" + Num(e.Low) + ", " + Num(e.High) + "]"
}

// num formats a figure with precision that suits its size (deterministic).
func Num(v float64) string {
	a := math.Abs(v)
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return fmt.Sprint(v)
	case a == 0:
		return "0"
	case a >= 100:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	case a >= 0.01:
		return fmt.Sprintf("%.3f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

func Nums(vs []float64) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = Num(v)
	}
	return strings.Join(s, ", ")
}

func Pct(f float64) string { return Num(f*100) + " %" }

func OrText(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

func Short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// ResolutionText is "±1.2 %" for a resolution fraction, or "not measured".
func ResolutionText(pm *float64) string {
	if pm == nil {
		return "not measured"
	}
	return "±" + PctOf(*pm)
}

// pctOf is a fraction as a percentage with enough digits to tell small ones apart: "0.42 %".
func PctOf(f float64) string {
	v := 100 * f
	switch {
	case v >= 10:
		return fmt.Sprintf("%.0f %%", v)
	case v >= 1:
		return fmt.Sprintf("%.1f %%", v)
	}
	return fmt.Sprintf("%.2f %%", v)
}

// How every latency comparison reads, said the same way wherever a figure
// appears: a ratio is candidate/baseline (below 1: the candidate is faster),
// a speedup baseline/candidate (above 1: faster), as the Amdahl bound is.
const (
	RatioWords   = "candidate/baseline"
	SpeedupWords = "speedup baseline/candidate"
)

// RatioLabel labels a candidate/baseline latency ratio of what ("mean
// E2E"), with unit when not "": "candidate/baseline mean E2E (lower is
// better)".
func RatioLabel(what, unit string) string { return directionLabel(RatioWords, what, unit, "lower") }

// SpeedupLabel labels a baseline/candidate speedup of what ("" for the
// bound itself), with unit when not "": "speedup baseline/candidate mean E2E
// (×; higher is better)".
func SpeedupLabel(what, unit string) string {
	return directionLabel(SpeedupWords, what, unit, "higher")
}

func directionLabel(words, what, unit, better string) string {
	s := words
	if what != "" {
		s += " " + what
	}
	if unit != "" {
		unit += "; "
	}
	return s + " (" + unit + better + " is better)"
}

// MetricText names a metric statistic as labels read it: "mean E2E", "p99
// TTFT", "mean TTFT (intended)".
func MetricText(metric, stat string) string {
	name, intended := strings.CutSuffix(metric, "_intended")
	s := stat + " " + strings.ToUpper(name)
	if intended {
		s += " (intended)"
	}
	return s
}
