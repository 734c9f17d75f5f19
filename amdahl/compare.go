package amdahl

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"gonum.org/v1/gonum/stat"

	"github.com/transferlab/transferlab/stats"
)

// ErrTooFewSamples means a statistic needs more samples than were given
// (a p99 from fewer than 100 requests is not a p99).
var ErrTooFewSamples = errors.New("too few samples for the statistic")

// Statistic is a summary of latency samples (ms or any one unit) that a
// measured speedup is the ratio of. MinN is the fewest samples it is defined on.
type Statistic struct {
	Name string
	MinN int
	// Of summarises sorted samples.
	Of func(sorted []float64) float64
}

// Mean is the arithmetic mean; defined on ≥ 1 sample.
func Mean() Statistic {
	return Statistic{Name: "mean", MinN: 1, Of: func(x []float64) float64 { return stat.Mean(x, nil) }}
}

// Quantile is the p-quantile (0 < p < 1) by stats.NearestRank (gonum's
// empirical, lower, definition); it needs ⌈1/(1−p)⌉ samples (100 for p99), so that at least one
// sample lies above it.
func Quantile(p float64) Statistic {
	return Statistic{
		Name: fmt.Sprintf("p%g", p*100),
		MinN: int(math.Ceil(1/(1-p) - 1e-9)),
		Of:   func(x []float64) float64 { return stats.NearestRank(x, p) },
	}
}

// SpeedupEstimate is the measured service-level speedup of one latency
// statistic, baseline/candidate (> 1: the candidate is faster), with a
// percentile bootstrap interval that resamples each arm's requests
// independently. Samples are per-request latencies in one unit.
func SpeedupEstimate(baseline, candidate []float64, st Statistic, opts ...BootOption) (Estimate, error) {
	c := newBootConfig(opts)
	if err := c.validate(); err != nil {
		return Estimate{}, err
	}
	if len(baseline) < st.MinN || len(candidate) < st.MinN {
		return Estimate{}, fmt.Errorf("amdahl: speedup of %s: %d baseline and %d candidate samples, need %d each: %w",
			st.Name, len(baseline), len(candidate), st.MinN, ErrTooFewSamples)
	}
	for name, xs := range map[string][]float64{"baseline": baseline, "candidate": candidate} {
		for i, x := range xs {
			if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
				return Estimate{}, fmt.Errorf("amdahl: speedup of %s: %s sample %d = %v is not a latency", st.Name, name, i, x)
			}
		}
	}
	sb, sc := slices.Sorted(slices.Values(baseline)), slices.Sorted(slices.Values(candidate))
	point := st.Of(sb) / st.Of(sc)
	r := c.rng()
	bufB, bufC := make([]float64, len(sb)), make([]float64, len(sc))
	reps := make([]float64, c.resamples)
	for b := range reps {
		for i := range bufB {
			bufB[i] = sb[r.IntN(len(sb))]
		}
		for i := range bufC {
			bufC[i] = sc[r.IntN(len(sc))]
		}
		slices.Sort(bufB)
		slices.Sort(bufC)
		reps[b] = st.Of(bufB) / st.Of(bufC)
	}
	lo, hi := c.interval(reps)
	return Estimate{Value: Num(point), Lo: lo, Hi: hi, Level: c.level, N: min(len(sb), len(sc)),
		Method: "bootstrap over requests, each arm resampled, " + st.Name + " ratio baseline/candidate"}, nil
}

// Verdict places a measured speedup relative to the bound.
type Verdict string

// The verdicts. Inside: the two intervals overlap. Below: the measured
// interval lies wholly under the bound's. Above: wholly over it (Amdahl says
// this cannot happen for the modelled effect alone: f or s is off, or the
// service gained elsewhere, e.g. less queueing).
const (
	VerdictInside  Verdict = "inside"
	VerdictBelow   Verdict = "below"
	VerdictAbove   Verdict = "above"
	VerdictUnknown Verdict = "unknown"
)

// Comparison is a measured speedup set against the bound.
type Comparison struct {
	Measured Estimate `json:"measured"`
	Verdict  Verdict  `json:"verdict"`
	// GapPct = (measured/bound − 1)·100 at the point values, in percent.
	GapPct Num `json:"gap_pct"`
	// Distance is how far apart the intervals are, in speedup units: bound.Lo −
	// measured.Hi when below, measured.Lo − bound.Hi when above, 0 inside.
	Distance Num `json:"distance"`
	// Efficiency is TransferEfficiency(measured, bound) with an interval from
	// the corners of the two intervals (it is monotone in each); undefined
	// (null) when the bound's interval reaches 1, where the ratio has a pole.
	Efficiency Estimate `json:"efficiency"`
}

// Compare sets a measured speedup (with its interval) against the bound's.
func Compare(measured, bound Estimate) Comparison {
	c := Comparison{Measured: measured, Verdict: VerdictUnknown, GapPct: NaN(), Distance: NaN(), Efficiency: Undefined()}
	if !measured.Value.Defined() || !bound.Value.Defined() {
		return c
	}
	measured, bound = pointIfNoInterval(measured), pointIfNoInterval(bound)
	c.GapPct = Num((float64(measured.Value)/float64(bound.Value) - 1) * 100)
	switch {
	case measured.Hi < bound.Lo:
		c.Verdict, c.Distance = VerdictBelow, bound.Lo-measured.Hi
	case measured.Lo > bound.Hi:
		c.Verdict, c.Distance = VerdictAbove, measured.Lo-bound.Hi
	default:
		c.Verdict, c.Distance = VerdictInside, 0
	}
	eff := Estimate{Value: Num(TransferEfficiency(float64(measured.Value), float64(bound.Value))), Lo: NaN(), Hi: NaN(),
		Level: max(measured.Level, bound.Level), N: measured.N, Method: "interval corners of measured and bound"}
	if bound.Lo > 1 || bound.Hi < 1 {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, m := range []Num{measured.Lo, measured.Hi} {
			for _, b := range []Num{bound.Lo, bound.Hi} {
				e := TransferEfficiency(float64(m), float64(b))
				lo, hi = min(lo, e), max(hi, e)
			}
		}
		eff.Lo, eff.Hi = Num(lo), Num(hi)
	}
	c.Efficiency = eff
	return c
}

// pointIfNoInterval treats an estimate whose interval is undefined as the
// point [Value, Value], so a verdict never rests on a comparison with NaN.
func pointIfNoInterval(e Estimate) Estimate {
	if !e.Lo.Defined() || !e.Hi.Defined() {
		e.Lo, e.Hi = e.Value, e.Value
	}
	return e
}

// Measured holds the measured candidate-vs-baseline speedups (baseline /
// candidate latency) of one offered load; an unmeasured one is Undefined().
type Measured struct {
	TTFTMean, TTFTP99, TPOTMean, TPOTP99, E2EMean, E2EP99 Estimate
}

// RowInput is what NewRow needs for one offered load.
type RowInput struct {
	OfferedLoadRPS float64
	// Simulated labels figures from the embedded simulator.
	Simulated bool
	Fractions Fractions
	// FWall is f_wall with its interval; zero value: Exact(Fractions.FWall).
	FWall Estimate
	// S is the isolated speedup with its interval (IsolatedSpeedupEstimate, or
	// Exact of the simulator's override factor).
	S Estimate
	// Bound is the bound with its interval (BoundEstimate); zero value:
	// BoundFromEstimates(FWall, S).
	Bound    Estimate
	Measured Measured
}

// Row is one line of the report's Amdahl table (one offered load).
type Row struct {
	OfferedLoadRPS float64  `json:"offered_load_rps"`
	Simulated      bool     `json:"simulated"`
	FSource        string   `json:"f_source"`
	FGPU           Num      `json:"f_gpu"`
	FWall          Estimate `json:"f_wall"`
	FExcl          Num      `json:"f_excl"`
	S              Estimate `json:"s"`
	Bound          Estimate `json:"bound"`

	TTFTMean Comparison `json:"ttft_mean"`
	TTFTP99  Comparison `json:"ttft_p99"`
	TPOTMean Comparison `json:"tpot_mean"`
	TPOTP99  Comparison `json:"tpot_p99"`
	E2EMean  Comparison `json:"e2e_mean"`
	E2EP99   Comparison `json:"e2e_p99"`

	// Explanation is set when f_gpu and f_wall differ by more than 2×.
	Explanation string `json:"explanation,omitempty"`
}

// NewRow builds one row of the Amdahl table: the bound (from f_wall, as
// DESIGN.md says) and each measured speedup compared with it.
func NewRow(in RowInput) (Row, error) {
	fr := in.Fractions
	fw := in.FWall
	if fw.Method == "" {
		fw = Exact(float64(fr.FWall))
	}
	if !fw.Value.Defined() {
		return Row{}, fmt.Errorf("amdahl: row at %g req/s: f_wall undefined (source %s)", in.OfferedLoadRPS, fr.Source)
	}
	if in.S.Method == "" || !in.S.Value.Defined() {
		return Row{}, fmt.Errorf("amdahl: row at %g req/s: isolated speedup s not given", in.OfferedLoadRPS)
	}
	bound := in.Bound
	if bound.Method == "" {
		var err error
		if bound, err = BoundFromEstimates(fw, in.S); err != nil {
			return Row{}, fmt.Errorf("amdahl: row at %g req/s: %w", in.OfferedLoadRPS, err)
		}
	}
	m := in.Measured
	return Row{
		OfferedLoadRPS: in.OfferedLoadRPS, Simulated: in.Simulated, FSource: fr.Source,
		FGPU: fr.FGPU, FWall: fw, FExcl: fr.FExcl, S: in.S, Bound: bound,
		TTFTMean: Compare(m.TTFTMean, bound), TTFTP99: Compare(m.TTFTP99, bound),
		TPOTMean: Compare(m.TPOTMean, bound), TPOTP99: Compare(m.TPOTP99, bound),
		E2EMean: Compare(m.E2EMean, bound), E2EP99: Compare(m.E2EP99, bound),
		Explanation: Explain(fr),
	}, nil
}

// Explain returns why f_gpu and f_wall differ when they differ by more than
// 2× (either way), else "".
func Explain(fr Fractions) string {
	g, w := fr.FGPU, fr.FWall
	if !g.Defined() || !w.Defined() || (g <= 2*w && w <= 2*g) {
		return ""
	}
	busyPct := 100 * float64(fr.Busy) / float64(fr.ActiveWall)
	if g > w {
		return fmt.Sprintf("f_gpu %.3g is %s f_wall %.3g: the GPU was busy only %.0f%% of the active wall time (busy %v of %v); the rest is CPU-side work (kernel launches, scheduling, sampling, HTTP) and GPU idle time that a faster kernel does not shorten, so the bound uses f_wall (a candidate with fewer launches can also save launch time, which kernel-time f does not count).",
			float64(g), times(float64(g), float64(w)), float64(w), busyPct, fr.Busy.Round(time.Microsecond), fr.ActiveWall.Round(time.Microsecond))
	}
	return fmt.Sprintf("f_wall %.3g is %s f_gpu %.3g: GPU busy time in the window (%v) is %.0f%% of the active wall time (%v), so much GPU work ran while no request was in flight (warm-up, or request intervals on a misaligned clock); check the clock offset before trusting the bound.",
		float64(w), times(float64(w), float64(g)), float64(g), fr.Busy.Round(time.Microsecond), busyPct, fr.ActiveWall.Round(time.Microsecond))
}

func times(a, b float64) string {
	if b == 0 {
		return "∞×"
	}
	return fmt.Sprintf("%.1f×", a/b)
}

// Latencies are one arm's per-request latency samples at one offered load,
// in one unit (ms in transferlab), for MeasureSpeedups. TPOT holds only
// requests with ≥ 2 output tokens (DESIGN.md).
type Latencies struct {
	TTFT, TPOT, E2E []float64
}

// MeasureSpeedups computes the six measured speedups of a Row (mean and p99
// of TTFT, TPOT, E2E; baseline/candidate) with SpeedupEstimate. A statistic
// with too few samples (p99 needs 100 per arm) is Undefined, and its reason is
// returned in notes; any other problem is an error.
func MeasureSpeedups(baseline, candidate Latencies, opts ...BootOption) (m Measured, notes []string, err error) {
	one := func(metric string, b, c []float64, st Statistic) Estimate {
		if err != nil {
			return Undefined()
		}
		e, e2 := SpeedupEstimate(b, c, st, opts...)
		switch {
		case errors.Is(e2, ErrTooFewSamples):
			notes = append(notes, fmt.Sprintf("%s %s: %v", metric, st.Name, e2))
			return Undefined()
		case e2 != nil:
			err = fmt.Errorf("%s: %w", metric, e2)
			return Undefined()
		}
		return e
	}
	mean, p99 := Mean(), Quantile(0.99)
	m = Measured{
		TTFTMean: one("ttft", baseline.TTFT, candidate.TTFT, mean),
		TTFTP99:  one("ttft", baseline.TTFT, candidate.TTFT, p99),
		TPOTMean: one("tpot", baseline.TPOT, candidate.TPOT, mean),
		TPOTP99:  one("tpot", baseline.TPOT, candidate.TPOT, p99),
		E2EMean:  one("e2e", baseline.E2E, candidate.E2E, mean),
		E2EP99:   one("e2e", baseline.E2E, candidate.E2E, p99),
	}
	return m, notes, err
}
