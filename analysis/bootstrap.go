package analysis

import (
	"math"
	"math/rand/v2"

	"github.com/transferlab/transferlab/report"
	"github.com/transferlab/transferlab/stats"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// bootstrapper draws seeded percentile-bootstrap intervals over repetitions.
// Each estimate gets its own stream, seeded from (Seed, key), so a figure's
// interval does not depend on which other figures were computed first.
type bootstrapper struct {
	seed      uint64
	resamples int
	level     float64
}

func (b bootstrapper) rng(key string) *rand.Rand { return stats.BootstrapStreamFor(b.seed, key) }

// interval returns the (1−level)/2 and (1+level)/2 empirical quantiles of draws.
func (b bootstrapper) interval(draws []float64) (lo, hi float64) {
	lo, hi, _ = stats.BootstrapInterval(draws, b.level)
	return lo, hi
}

// mean estimates the mean of xs (one value per repetition) with a percentile
// bootstrap interval: resample the repetitions with replacement Resamples times.
func (b bootstrapper) mean(key string, xs []float64) report.Estimate {
	e, ok := repsMean(xs)
	if !ok {
		return e
	}
	rng := b.rng(key)
	draws := make([]float64, b.resamples)
	for i := range draws {
		var s float64
		for range xs {
			s += xs[rng.IntN(len(xs))]
		}
		draws[i] = s / float64(len(xs))
	}
	e.Low, e.High = b.interval(draws)
	e.Interval = true
	return e
}

// repsMean is the estimate of the mean of xs (one value per repetition)
// before its interval: the mean as value and both ends, or, with ok false,
// the note why no interval over repetitions can be had (none, or only one).
func repsMean(xs []float64) (e report.Estimate, ok bool) {
	e = report.Estimate{Reps: len(xs)}
	if len(xs) == 0 {
		e.Note = "no repetition measured it"
		return e, false
	}
	e.Value = stat.Mean(xs, nil)
	e.Low, e.High = e.Value, e.Value
	if len(xs) < 2 {
		e.Note = "1 repetition: an interval over repetitions needs ≥ 2"
		return e, false
	}
	return e, true
}

// tMean estimates the mean of xs (one value per repetition) with a Student t
// interval at the bootstrapper's level: mean ± t(n − 1) · sd / √n (sd the
// sample standard deviation, n − 1 degrees of freedom). With 3 repetitions a
// bootstrap over them only spans their range; the t interval is the honest
// one for so few values (it assumes they are roughly normal).
func (b bootstrapper) tMean(xs []float64) report.Estimate {
	e, ok := repsMean(xs)
	if !ok {
		return e
	}
	n := float64(len(xs))
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: n - 1}.Quantile((1 + b.level) / 2)
	h := t * stat.StdDev(xs, nil) / math.Sqrt(n)
	e.Low, e.High = e.Value-h, e.Value+h
	e.Interval = true
	return e
}

// ratio estimates mean(num)/mean(den) with a percentile bootstrap interval.
// When paired (the two arms ran the same repetitions, interleaved), one draw
// of repetition indices serves both arms, so drift shared by a repetition
// cancels; otherwise the arms are resampled independently.
func (b bootstrapper) ratio(key string, num, den []float64, paired bool) report.Estimate {
	e := report.Estimate{Reps: min(len(num), len(den))}
	if len(num) == 0 || len(den) == 0 {
		e.Note = "a side has no measured repetition"
		return e
	}
	mn, md := stat.Mean(num, nil), stat.Mean(den, nil)
	if md == 0 {
		e.Reps, e.Note = 0, "baseline mean is 0: ratio undefined"
		return e
	}
	e.Value = mn / md
	e.Low, e.High = e.Value, e.Value
	if len(num) < 2 || len(den) < 2 {
		e.Note = "1 repetition: an interval over repetitions needs ≥ 2"
		return e
	}
	paired = paired && len(num) == len(den)
	rng := b.rng(key)
	draws := make([]float64, 0, b.resamples)
	for range b.resamples {
		var sn, sd float64
		if paired {
			for range num {
				j := rng.IntN(len(num))
				sn += num[j]
				sd += den[j]
			}
		} else {
			for range num {
				sn += num[rng.IntN(len(num))]
			}
			for range den {
				sd += den[rng.IntN(len(den))]
			}
		}
		if sd == 0 {
			continue
		}
		draws = append(draws, (sn/float64(len(num)))/(sd/float64(len(den))))
	}
	return b.ratioInterval(e, draws)
}

// ratioInterval sets e's interval from the bootstrap draws of a ratio, or
// says that every resample had a zero baseline.
func (b bootstrapper) ratioInterval(e report.Estimate, draws []float64) report.Estimate {
	if len(draws) == 0 {
		e.Note = "every resample had a zero baseline"
		return e
	}
	e.Low, e.High = b.interval(draws)
	e.Interval = true
	return e
}
