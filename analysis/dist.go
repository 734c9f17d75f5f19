package analysis

import (
	"fmt"
	"slices"
	"time"

	"github.com/transferlab/transferlab/report"
	"github.com/transferlab/transferlab/stats"
)

// quantileSpec names one reported quantile and where it goes in a Dist.
type quantileSpec struct {
	name string
	q    float64
	set  func(d *report.Dist, v *float64)
}

// reportedQuantiles are the percentiles every Dist carries (DESIGN.md,
// "Percentiles": p50, p90, p95, p99, p99.9; max and mean are always given).
var reportedQuantiles = [...]quantileSpec{
	{"p50", 0.50, func(d *report.Dist, v *float64) { d.P50Ms = v }},
	{"p90", 0.90, func(d *report.Dist, v *float64) { d.P90Ms = v }},
	{"p95", 0.95, func(d *report.Dist, v *float64) { d.P95Ms = v }},
	{"p99", 0.99, func(d *report.Dist, v *float64) { d.P99Ms = v }},
	{"p99.9", 0.999, func(d *report.Dist, v *float64) { d.P999Ms = v }},
}

// distMethod describes how BuildDist computes its figures, for the report.
func distMethod(conf float64) string {
	return fmt.Sprintf("exact nearest-rank over n raw samples; pX refused when n < ⌈ln(1−c)/ln(X)⌉, c=%g (order-statistic rule)", conf)
}

// BuildDist summarises samples (any order; not modified) in milliseconds:
// mean, max and the reported percentiles by stats.NearestRank. A percentile whose
// claim needs more samples than len(samples) at confidence conf (MinSamples)
// is left nil and named in Refused. With no samples every figure is nil.
// cdfPoints > 0 also fills CDF with that many evenly spaced quantiles.
func BuildDist(samplesMs []float64, conf float64, cdfPoints int) report.Dist {
	d := report.Dist{N: len(samplesMs), Method: distMethod(conf)}
	if len(samplesMs) == 0 {
		for _, s := range reportedQuantiles {
			d.Refused = append(d.Refused, s.name)
		}
		return d
	}
	sorted := slices.Clone(samplesMs)
	slices.Sort(sorted)
	var sum float64
	for _, v := range sorted {
		sum += v
	}
	d.MeanMs = ptr(sum / float64(len(sorted)))
	d.MaxMs = ptr(sorted[len(sorted)-1])
	for _, s := range reportedQuantiles {
		need, err := stats.MinSamples(s.q, conf)
		if err != nil || len(sorted) < need {
			d.Refused = append(d.Refused, s.name)
			continue
		}
		s.set(&d, ptr(stats.NearestRank(sorted, s.q)))
	}
	if cdfPoints > 0 {
		d.CDF = cdf(sorted, cdfPoints)
	}
	return d
}

// cdf returns up to points (fraction, value) pairs of the empirical CDF of
// sorted, evenly spaced in fraction from 1/points to 1.
func cdf(sorted []float64, points int) []report.CDFPoint {
	if points > len(sorted) {
		points = len(sorted)
	}
	out := make([]report.CDFPoint, 0, points)
	for i := 1; i <= points; i++ {
		q := float64(i) / float64(points)
		out = append(out, report.CDFPoint{Fraction: q, Ms: stats.NearestRank(sorted, q)})
	}
	return out
}

// Quantile returns the named percentile of d ("p50", "p90", "p95", "p99",
// "p99.9", "max", "mean") in ms. It wraps ErrTooFewSamples when d refused that
// percentile and returns an error for an unknown name.
func Quantile(d report.Dist, name string) (float64, error) {
	var v *float64
	switch name {
	case "p50":
		v = d.P50Ms
	case "p90":
		v = d.P90Ms
	case "p95":
		v = d.P95Ms
	case "p99":
		v = d.P99Ms
	case "p99.9":
		v = d.P999Ms
	case "max":
		v = d.MaxMs
	case "mean":
		v = d.MeanMs
	default:
		return 0, fmt.Errorf("unknown percentile %q (want p50, p90, p95, p99, p99.9, max or mean)", name)
	}
	if v == nil {
		return 0, fmt.Errorf("%s over n=%d: %w", name, d.N, stats.ErrTooFewSamples)
	}
	return *v, nil
}

// CheckPercentile says why p (a percentile, e.g. 99) is not one a cell's
// distributions hold (report.Dist: p50, p90, p95, p99, p99.9), so that no
// SLO or decision rule can be judged at it; nil when it is.
func CheckPercentile(p float64) error {
	if _, _, err := percentileName(p); err != nil || p == 0 {
		return fmt.Errorf("must be one of 50, 90, 95, 99 or 99.9 (the percentiles the report computes per cell), got %g", p)
	}
	return nil
}

// percentileName maps a percentile given as a number (99, 99.9, 50) to its
// Dist name; 0 means the default p99.
func percentileName(p float64) (string, float64, error) {
	switch p {
	case 0, 99:
		return "p99", 0.99, nil
	case 50:
		return "p50", 0.50, nil
	case 90:
		return "p90", 0.90, nil
	case 95:
		return "p95", 0.95, nil
	case 99.9:
		return "p99.9", 0.999, nil
	}
	return "", 0, fmt.Errorf("percentile %v is not one of 50, 90, 95, 99 or 99.9", p)
}

func ptr(v float64) *float64 { return &v }

// ms converts a duration to float milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
