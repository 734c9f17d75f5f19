package amdahl

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/transferlab/transferlab/stats"
)

// Estimate is a point value with a confidence interval [Lo, Hi] at Level
// (e.g. 0.95), from N units (windows, shapes or requests) by Method. Lo = Hi
// = Value for an exact input (Exact).
type Estimate struct {
	Value  Num     `json:"value"`
	Lo     Num     `json:"lo"`
	Hi     Num     `json:"hi"`
	Level  float64 `json:"level,omitempty"`
	N      int     `json:"n"`
	Method string  `json:"method"`
}

// Exact is an estimate without uncertainty, e.g. the simulator's override
// factor, which is s by construction.
func Exact(v float64) Estimate {
	return Estimate{Value: Num(v), Lo: Num(v), Hi: Num(v), N: 1, Method: "exact"}
}

// Undefined is an estimate with no value (e.g. a measured speedup that was not taken).
func Undefined() Estimate { return Estimate{Value: NaN(), Lo: NaN(), Hi: NaN(), Method: "none"} }

// BootOption sets the bootstrap used by the *Estimate functions.
type BootOption func(*bootConfig)

type bootConfig struct {
	resamples int
	level     float64
	seed      uint64
}

func newBootConfig(opts []BootOption) bootConfig {
	c := bootConfig{resamples: 2000, level: 0.95, seed: 1}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// Resamples sets the number of bootstrap resamples. Default 2000.
func Resamples(n int) BootOption { return func(c *bootConfig) { c.resamples = n } }

// Level sets the two-sided confidence level of percentile intervals. Default 0.95.
func Level(l float64) BootOption { return func(c *bootConfig) { c.level = l } }

// Seed seeds the bootstrap's PCG generator (math/rand/v2), so intervals are
// reproducible; put it in the report. Default 1.
func Seed(s uint64) BootOption { return func(c *bootConfig) { c.seed = s } }

func (c bootConfig) validate() error {
	if c.resamples < 100 {
		return fmt.Errorf("amdahl: bootstrap: %d resamples (need ≥ 100)", c.resamples)
	}
	if !(c.level > 0 && c.level < 1) {
		return fmt.Errorf("amdahl: bootstrap: level %v not in (0, 1)", c.level)
	}
	return nil
}

func (c bootConfig) rng() *rand.Rand { return stats.BootstrapStream(c.seed, 0x7472616e73666572) }

// percentile interval of the replicates (sorted in place, NaNs dropped).
func (c bootConfig) interval(reps []float64) (Num, Num) {
	lo, hi, _ := stats.BootstrapInterval(reps, c.level)
	return Num(lo), Num(hi)
}

// WindowSample is one profiled window's target GPU time and active wall time
// (and busy time, 0 when unknown), the unit the bootstrap of f resamples.
type WindowSample struct {
	Label      string        `json:"label"`
	Target     time.Duration `json:"target_ns"`
	Busy       time.Duration `json:"busy_ns"`
	ActiveWall time.Duration `json:"active_wall_ns"`
}

// pooledF is Σ target / Σ active wall over the windows picked by idx.
func pooledF(ws []WindowSample, idx func(i int) int) float64 {
	var t, a float64
	for i := range ws {
		w := ws[idx(i)]
		t += float64(w.Target)
		a += float64(w.ActiveWall)
	}
	if a <= 0 {
		return math.NaN()
	}
	return t / a
}

func checkWindows(ws []WindowSample) error {
	if len(ws) == 0 {
		return errors.New("amdahl: f: no windows")
	}
	for i, w := range ws {
		if w.Target < 0 || w.ActiveWall <= 0 || w.Target > w.ActiveWall {
			return fmt.Errorf("amdahl: f: window %d (%s): target %v, active wall %v: need 0 ≤ target ≤ active wall, active wall > 0", i, w.Label, w.Target, w.ActiveWall)
		}
	}
	return nil
}

// FWallEstimate is f_wall pooled over profiled windows, Σ target / Σ active
// wall (each window weighted by its active time), with a percentile bootstrap
// interval from resampling whole windows with replacement. One window gives
// Lo = Hi = Value (no spread can be seen; N says so).
func FWallEstimate(ws []WindowSample, opts ...BootOption) (Estimate, error) {
	c := newBootConfig(opts)
	if err := c.validate(); err != nil {
		return Estimate{}, err
	}
	if err := checkWindows(ws); err != nil {
		return Estimate{}, err
	}
	r := c.rng()
	reps := make([]float64, c.resamples)
	for b := range reps {
		reps[b] = pooledF(ws, func(int) int { return r.IntN(len(ws)) })
	}
	lo, hi := c.interval(reps)
	return Estimate{Value: Num(pooledF(ws, func(i int) int { return i })), Lo: lo, Hi: hi, Level: c.level, N: len(ws), Method: "bootstrap over windows, pooled Σtarget/Σactive"}, nil
}

// ShapeSpeedup is one row of the validation report's per-shape table: how
// often the server called the target with this shape during the baseline
// replay, and the original and candidate kernels' median times on it
// (CUDA events, µs).
type ShapeSpeedup struct {
	Shape             string  `json:"shape"`
	Count             int     `json:"count"`
	OriginalMedianUs  float64 `json:"original_median_us"`
	CandidateMedianUs float64 `json:"candidate_median_us"`
}

// Speedup is OriginalMedianUs / CandidateMedianUs.
func (r ShapeSpeedup) Speedup() float64 { return r.OriginalMedianUs / r.CandidateMedianUs }

func checkShapes(rows []ShapeSpeedup) error {
	if len(rows) == 0 {
		return errors.New("amdahl: s: no shapes")
	}
	total := 0
	for i, r := range rows {
		if r.Count < 0 || !(r.OriginalMedianUs > 0) || !(r.CandidateMedianUs > 0) ||
			math.IsInf(r.OriginalMedianUs, 0) || math.IsInf(r.CandidateMedianUs, 0) {
			return fmt.Errorf("amdahl: s: shape row %d (%s): count %d, original %v µs, candidate %v µs: need count ≥ 0 and finite medians > 0",
				i, r.Shape, r.Count, r.OriginalMedianUs, r.CandidateMedianUs)
		}
		total += r.Count
	}
	if total == 0 {
		return errors.New("amdahl: s: every shape has count 0")
	}
	return nil
}

// weightedGeoMean is exp(Σ countᵢ·ln sᵢ / Σ countᵢ) over the rows picked by idx.
func weightedGeoMean(rows []ShapeSpeedup, idx func(i int) int) float64 {
	var num, den float64
	for i := range rows {
		r := rows[idx(i)]
		num += float64(r.Count) * math.Log(r.Speedup())
		den += float64(r.Count)
	}
	if den == 0 {
		return math.NaN()
	}
	return math.Exp(num / den)
}

// IsolatedSpeedup is s, the frequency-weighted geometric mean of the per-shape
// speedups: exp(Σ countᵢ·ln(originalᵢ/candidateᵢ) / Σ countᵢ) (DESIGN.md,
// "Validation gate"). Dimensionless.
func IsolatedSpeedup(rows []ShapeSpeedup) (float64, error) {
	if err := checkShapes(rows); err != nil {
		return math.NaN(), err
	}
	return weightedGeoMean(rows, func(i int) int { return i }), nil
}

// IsolatedSpeedupEstimate is IsolatedSpeedup with a percentile bootstrap
// interval from resampling shape rows with replacement (each keeps its count
// as weight): it says how much s depends on which shapes were seen. A single
// shape gives Lo = Hi.
func IsolatedSpeedupEstimate(rows []ShapeSpeedup, opts ...BootOption) (Estimate, error) {
	c := newBootConfig(opts)
	if err := c.validate(); err != nil {
		return Estimate{}, err
	}
	s, err := IsolatedSpeedup(rows)
	if err != nil {
		return Estimate{}, err
	}
	r := c.rng()
	reps := make([]float64, c.resamples)
	for b := range reps {
		reps[b] = weightedGeoMean(rows, func(int) int { return r.IntN(len(rows)) })
	}
	lo, hi := c.interval(reps)
	return Estimate{Value: Num(s), Lo: lo, Hi: hi, Level: c.level, N: len(rows), Method: "bootstrap over shapes, count-weighted geometric mean"}, nil
}

// BoundEstimate is Bound(f_wall, s) at the point estimates, with a percentile
// bootstrap interval: each replicate resamples the windows (pooled f_wall)
// and, independently, the shape rows (weighted geometric mean s) and
// evaluates the bound.
func BoundEstimate(ws []WindowSample, rows []ShapeSpeedup, opts ...BootOption) (Estimate, error) {
	c := newBootConfig(opts)
	if err := c.validate(); err != nil {
		return Estimate{}, err
	}
	if err := checkWindows(ws); err != nil {
		return Estimate{}, err
	}
	s, err := IsolatedSpeedup(rows)
	if err != nil {
		return Estimate{}, err
	}
	b0, err := Bound(pooledF(ws, func(i int) int { return i }), s)
	if err != nil {
		return Estimate{}, err
	}
	r := c.rng()
	reps := make([]float64, c.resamples)
	for b := range reps {
		f := pooledF(ws, func(int) int { return r.IntN(len(ws)) })
		sb := weightedGeoMean(rows, func(int) int { return r.IntN(len(rows)) })
		reps[b], _ = Bound(f, sb) // NaN on error, dropped by interval
	}
	lo, hi := c.interval(reps)
	return Estimate{Value: Num(b0), Lo: lo, Hi: hi, Level: c.level, N: len(ws) * len(rows), Method: "bootstrap over windows × shapes"}, nil
}

// BoundFromEstimates evaluates the bound at f's and s's point values, with
// an interval by interval arithmetic: 1/Bound = 1 − f·(1 − 1/s) is bilinear in
// (f, 1/s), so over the box [f.Lo, f.Hi] × [s.Lo, s.Hi] its extremes lie at
// the four corners. Use it when f or s came without their raw units (e.g. s
// exact from the simulator's override).
func BoundFromEstimates(f, s Estimate) (Estimate, error) {
	v, err := Bound(float64(f.Value), float64(s.Value))
	if err != nil {
		return Estimate{}, err
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, fc := range []Num{f.Lo, f.Hi} {
		for _, sc := range []Num{s.Lo, s.Hi} {
			b, err := Bound(float64(fc), float64(sc))
			if err != nil {
				return Estimate{}, fmt.Errorf("amdahl: bound interval corner: %w", err)
			}
			lo, hi = min(lo, b), max(hi, b)
		}
	}
	return Estimate{Value: Num(v), Lo: Num(lo), Hi: Num(hi), Level: max(f.Level, s.Level), N: f.N * s.N, Method: "interval arithmetic on f and s"}, nil
}
