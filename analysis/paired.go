package analysis

import (
	"fmt"
	"math"
	"slices"

	"github.com/transferlab/transferlab/report"
	"github.com/transferlab/transferlab/stats"
)

// requestValue returns metric's figure of the request; ok is false when the request
// does not define it or the metric is not kept per request.
func requestValue(f report.RequestFigures, metric string) (float64, bool) {
	var p *float64
	switch metric {
	case "ttft":
		p = f.TTFTMs
	case "tpot":
		p = f.TPOTMs
	case "e2e":
		p = f.E2EMs
	}
	if p == nil {
		return 0, false
	}
	return *p, true
}

// pairedMetrics are the metrics a cell keeps per request (RequestFigures).
var pairedMetrics = []string{"ttft", "tpot", "e2e"}

// pairs is one metric's values of two arms, request by request: for each
// repetition both arms ran, the requests both completed, in schedule order.
type pairs struct {
	num, den [][]float64
}

// n is the number of request pairs over every repetition.
func (p pairs) n() int {
	n := 0
	for _, r := range p.num {
		n += len(r)
	}
	return n
}

// pairRequests matches metric's per-request figures of num and den by
// request ID within each repetition both groups measured. ok is false when a
// cell of either group kept no per-request figures (results written before
// they were kept), so no pairing is possible.
func pairRequests(num, den Group, metric string) (p pairs, ok bool) {
	byRep := map[int]report.Cell{}
	for _, c := range den.Cells {
		if len(c.Requests) == 0 {
			return pairs{}, false
		}
		byRep[c.Repetition] = c
	}
	for _, c := range num.Cells {
		if len(c.Requests) == 0 {
			return pairs{}, false
		}
		d, found := byRep[c.Repetition]
		if !found {
			continue
		}
		dv := map[int]float64{}
		for _, f := range d.Requests {
			if v, ok := requestValue(f, metric); ok {
				dv[f.ID] = v
			}
		}
		reqs := slices.Clone(c.Requests)
		slices.SortFunc(reqs, func(a, b report.RequestFigures) int { return a.ID - b.ID })
		var nv, dd []float64
		for _, f := range reqs {
			v, ok := requestValue(f, metric)
			w, ok2 := dv[f.ID]
			if ok && ok2 {
				nv, dd = append(nv, v), append(dd, w)
			}
		}
		if len(nv) > 0 {
			p.num, p.den = append(p.num, nv), append(p.den, dd)
		}
	}
	return p, true
}

// blockLength is the circular block bootstrap's block length for n paired
// requests: ⌈√n⌉. Queueing makes neighbouring requests' latencies depend on
// each other (a burst delays every request behind it), so requests are
// resampled in runs of consecutive ones; √n keeps whole bursts together
// while leaving √n blocks to resample (Politis & Romano 1992, Lahiri 2003:
// the block must grow with n; n^(1/3) is the MSE-optimal rate for weak
// dependence, √n the safer choice for queues, whose dependence is long).
func blockLength(n int) int {
	return max(1, int(math.Ceil(math.Sqrt(float64(n)))))
}

// pairedStat is stat ("mean", "p50", "p90", "p99", …) of the paired values
// as the ratio num/den: for the mean, Σ num / Σ den (the ratio of the means,
// as the per-cell figures are); for a percentile, the nearest-rank
// percentile of num over that of den. ok is false when den's figure is 0.
func pairedStat(stat string, num, den []float64) (float64, bool) {
	if stat == "mean" {
		sn, sd := floatsSum(num), floatsSum(den)
		if sd == 0 {
			return 0, false
		}
		return sn / sd, true
	}
	_, q, _ := percentileName(percentileOf(stat))
	n, d := slices.Clone(num), slices.Clone(den)
	slices.Sort(n)
	slices.Sort(d)
	dq := stats.NearestRank(d, q)
	if dq == 0 {
		return 0, false
	}
	return stats.NearestRank(n, q) / dq, true
}

func floatsSum(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s
}

// percentileOf maps a stat name to its percentile (p99 → 99); 0 for others.
func percentileOf(stat string) float64 {
	for _, p := range []float64{50, 90, 95, 99, 99.9} {
		if name, _, _ := percentileName(p); name == stat {
			return p
		}
	}
	return 0
}

// requestRatio estimates stat(num)/stat(den) over request pairs with a circular
// block bootstrap: each repetition's pairs are resampled in blocks of
// blockLength consecutive requests (both arms' values of a request move
// together, so what the arms share — the schedule, a burst — cancels), the
// repetitions are concatenated, and the statistic is taken over the whole.
// A percentile the pooled sample cannot support at DefaultConfidence
// (MinSamples; for a mean, the p50's minimum, as meanNeedsP50 says) is
// refused, with Reps and Requests 0.
func (b bootstrapper) requestRatio(key, stat string, p pairs) report.Estimate {
	n := p.n()
	e := report.Estimate{Reps: len(p.num), Requests: n}
	if n == 0 {
		e.Note = "no request completed in both arms"
		return e
	}
	q := 0.5 // a mean is compared only where a p50 could be claimed (meanNeedsP50)
	if p := percentileOf(stat); p > 0 {
		q = p / 100
	}
	if need, err := stats.MinSamples(q, stats.DefaultConfidence); err == nil && n < need {
		e = report.Estimate{Note: fmt.Sprintf("%d paired requests are too few for %s (n ≥ %d at %s confidence)", n, stat, need, report.Pct(stats.DefaultConfidence))}
		return e
	}
	allN, allD := concat(p.num), concat(p.den)
	v, ok := pairedStat(stat, allN, allD)
	if !ok {
		e.Note = "baseline figure is 0: ratio undefined"
		return e
	}
	e.Value, e.Low, e.High = v, v, v
	rng := b.rng(key)
	draws := make([]float64, 0, b.resamples)
	bn, bd := make([]float64, 0, n), make([]float64, 0, n)
	for range b.resamples {
		bn, bd = bn[:0], bd[:0]
		for r := range p.num {
			m := len(p.num[r])
			l := blockLength(m)
			for got := 0; got < m; {
				start := rng.IntN(m)
				for j := 0; j < l && got < m; j++ {
					k := (start + j) % m
					bn, bd = append(bn, p.num[r][k]), append(bd, p.den[r][k])
					got++
				}
			}
		}
		if d, ok := pairedStat(stat, bn, bd); ok {
			draws = append(draws, d)
		}
	}
	return b.ratioInterval(e, draws)
}

func concat(xs [][]float64) []float64 {
	var out []float64
	for _, x := range xs {
		out = append(out, x...)
	}
	return out
}
