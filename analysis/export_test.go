package analysis

import "github.com/transferlab/transferlab/report"

// The external tests (package analysis_test) reach these internals through
// the names below; they exist only in the test build.

var (
	Key       = key
	Decide    = decide
	SpeedupOf = speedupOf
)

func NewBootstrapper(seed uint64, resamples int, level float64) bootstrapper {
	return bootstrapper{seed: seed, resamples: resamples, level: level}
}

func NewPairs(num, den [][]float64) pairs { return pairs{num: num, den: den} }

func (b bootstrapper) Mean(key string, xs []float64) report.Estimate { return b.mean(key, xs) }

func (b bootstrapper) Ratio(key string, num, den []float64, paired bool) report.Estimate {
	return b.ratio(key, num, den, paired)
}

func (b bootstrapper) RequestRatio(key, stat string, p pairs) report.Estimate {
	return b.requestRatio(key, stat, p)
}
