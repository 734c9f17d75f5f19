package traces

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat/distuv"
)

// Arrival processes accepted by SyntheticSpec.Process.
const (
	ProcessConstant = "constant" // gaps exactly 1/RateRPS
	ProcessPoisson  = "poisson"  // gaps ~ Exponential(rate RateRPS): CV 1
	ProcessGamma    = "gamma"    // gaps ~ Gamma(shape 1/CV², rate RateRPS/CV²): mean 1/RateRPS, CV as given
)

// maxSynthetic bounds the requests Synthetic generates, so a typo in a rate
// or duration fails instead of exhausting memory.
const maxSynthetic = 50_000_000

// SyntheticSpec describes synthetic open-loop arrivals.
type SyntheticSpec struct {
	// Process is constant, poisson or gamma.
	Process string
	// RateRPS is the mean arrival rate in requests per second (> 0).
	RateRPS float64
	// CV is the coefficient of variation of inter-arrival gaps for gamma
	// (> 0; 1 is Poisson, > 1 burstier, < 1 more regular). Ignored otherwise.
	CV float64
	// N is how many requests to generate (0: bounded by Duration only).
	N int
	// Duration bounds the offsets: requests have 0 ≤ Offset < Duration
	// (0: bounded by N only). At least one of N and Duration must be set;
	// with both, generation stops at whichever comes first.
	Duration time.Duration
	// Seed seeds every random draw (arrivals and lengths from separate PCG
	// streams); it is recorded in Schedule.Source.
	Seed uint64
	// InputTokens and OutputTokens fix the token lengths when > 0.
	InputTokens, OutputTokens int
	// Lengths, when non-empty, is a trace whose (input, output) pairs are
	// drawn jointly, uniformly with replacement (its empirical distribution,
	// keeping the input/output correlation); a fixed InputTokens or
	// OutputTokens still overrides its side.
	Lengths *Schedule
}

// Synthetic generates arrivals: the first request at offset 0, then gaps
// drawn from the process (gonum stat/distuv with a math/rand/v2 PCG source
// seeded from Seed). Over many requests the MeanRate converges to RateRPS;
// the constant process hits it exactly. The result has Format "synthetic",
// SourceLine 0 and a Source naming process, rate, CV, bounds, seed and the
// lengths' source and SHA-256.
func Synthetic(spec SyntheticSpec) (Schedule, error) {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if !(spec.RateRPS > 0) || math.IsInf(spec.RateRPS, 0) {
		bad("rate %g req/s must be positive and finite", spec.RateRPS)
	}
	if spec.N < 0 || spec.Duration < 0 {
		bad("n %d and duration %s must be ≥ 0", spec.N, spec.Duration)
	}
	if spec.N == 0 && spec.Duration == 0 {
		bad("set n or duration")
	}
	if spec.Process == ProcessGamma && (!(spec.CV > 0) || math.IsInf(spec.CV, 0)) {
		bad("gamma needs a positive finite cv, got %g", spec.CV)
	}
	haveLengths := spec.Lengths != nil && len(spec.Lengths.Requests) > 0
	if !haveLengths && (spec.InputTokens < 1 || spec.OutputTokens < 1) {
		bad("token lengths: give a Lengths trace or fixed input and output tokens ≥ 1 (got %d, %d)", spec.InputTokens, spec.OutputTokens)
	}
	if spec.InputTokens < 0 || spec.OutputTokens < 0 {
		bad("fixed token lengths must be ≥ 0 (got %d, %d)", spec.InputTokens, spec.OutputTokens)
	}
	arrSrc := rand.NewPCG(spec.Seed, 1)
	var gap func() float64 // seconds
	switch spec.Process {
	case ProcessConstant:
		gap = func() float64 { return 1 / spec.RateRPS }
	case ProcessPoisson:
		d := distuv.Exponential{Rate: spec.RateRPS, Src: arrSrc}
		gap = d.Rand
	case ProcessGamma:
		k := 1 / (spec.CV * spec.CV)
		d := distuv.Gamma{Alpha: k, Beta: k * spec.RateRPS, Src: arrSrc}
		gap = d.Rand
	default:
		bad("process %q: want constant, poisson or gamma", spec.Process)
	}
	if len(errs) > 0 {
		return Schedule{}, fmt.Errorf("traces: synthetic: %w", errors.Join(errs...))
	}
	expected := spec.N
	if spec.Duration > 0 {
		e := spec.Duration.Seconds() * spec.RateRPS
		if e > maxSynthetic {
			return Schedule{}, fmt.Errorf("traces: synthetic: about %.0f requests (%s at %g req/s) exceed the limit of %d", e, spec.Duration, spec.RateRPS, maxSynthetic)
		}
		if expected == 0 || int(e) < expected {
			expected = int(e*1.1) + 16
		}
	}
	if expected > maxSynthetic {
		return Schedule{}, fmt.Errorf("traces: synthetic: %d requests exceed the limit of %d", expected, maxSynthetic)
	}
	lenRng := rand.New(rand.NewPCG(spec.Seed, 2))
	reqs := make([]Request, 0, min(expected, 1<<20))
	t := 0.0 // seconds
	for spec.N == 0 || len(reqs) < spec.N {
		off := time.Duration(math.Round(t * 1e9))
		if spec.Duration > 0 && off >= spec.Duration {
			break
		}
		if len(reqs) >= maxSynthetic {
			return Schedule{}, fmt.Errorf("traces: synthetic: more than %d requests", maxSynthetic)
		}
		r := Request{ID: len(reqs), Offset: off, InputTokens: spec.InputTokens, OutputTokens: spec.OutputTokens}
		if haveLengths {
			src := spec.Lengths.Requests[lenRng.IntN(len(spec.Lengths.Requests))]
			if r.InputTokens == 0 {
				r.InputTokens = src.InputTokens
			}
			if r.OutputTokens == 0 {
				r.OutputTokens = src.OutputTokens
			}
		}
		reqs = append(reqs, r)
		t += gap()
	}
	var src strings.Builder
	fmt.Fprintf(&src, "synthetic:%s rate_rps=%g", spec.Process, spec.RateRPS)
	if spec.Process == ProcessGamma {
		fmt.Fprintf(&src, " cv=%g", spec.CV)
	}
	if spec.N > 0 {
		fmt.Fprintf(&src, " n=%d", spec.N)
	}
	if spec.Duration > 0 {
		fmt.Fprintf(&src, " duration=%s", spec.Duration)
	}
	fmt.Fprintf(&src, " seed=%d", spec.Seed)
	if haveLengths {
		fmt.Fprintf(&src, " lengths=%s", spec.Lengths.Source)
		if spec.Lengths.SHA256 != "" {
			fmt.Fprintf(&src, " (sha256 %.12s)", spec.Lengths.SHA256)
		}
	}
	if spec.InputTokens > 0 || spec.OutputTokens > 0 {
		fmt.Fprintf(&src, " fixed_in=%d fixed_out=%d", spec.InputTokens, spec.OutputTokens)
	}
	return Schedule{Source: src.String(), Format: "synthetic", Requests: reqs}, nil
}
