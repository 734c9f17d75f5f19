package experiment

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/transferlab/transferlab/report"
	"github.com/transferlab/transferlab/servers"
	"github.com/transferlab/transferlab/sim"
	"github.com/transferlab/transferlab/traces"

	"gonum.org/v1/gonum/stat/distuv"
)

// simBound is one candidate's Amdahl bound at one load from the simulator's
// cost model: f of each op the arm changes is its share of the modelled step
// time over the load's schedule replayed in virtual time
// (sim.Config.OpShares of the baseline), s the arm's override factor (a
// ceiling removes the op: f / s = 0), and the bound 1 / ((1 − Σf) + Σ f/s)
// (DESIGN.md, "Amdahl").
type simBound struct {
	// f is Σf over the ops; s the combined factor Σf / Σ(f/s) (0 for a
	// ceiling of every op); bound the speedup bound (≥ 1).
	f, s, bound float64
	// fs holds each op's f, in ops order.
	fs []float64
}

// simArmBounds is, per candidate arm with sim_overrides (not the A/A
// replicate), its ops (sorted) and its simBound at each load of scheds.
// Nil for another server kind: f is measured in the run there.
func simArmBounds(cfg Config, scheds []traces.Schedule) (map[string][]simBound, map[string][]string, error) {
	if cfg.Server.Kind != servers.Sim || len(cfg.Arms) < 2 {
		return nil, nil, nil
	}
	sr := &runner{cfg: cfg}
	base := sr.simConfig(cfg.Arms[0])
	shares := make([]map[string]float64, len(scheds))
	for i, s := range scheds {
		arr := make([]sim.Arrival, len(s.Requests))
		for j, q := range s.Requests {
			arr[j] = sim.Arrival{At: q.Offset, Lengths: sim.Lengths{InputTokens: q.InputTokens, OutputTokens: q.OutputTokens}}
		}
		sh, err := base.OpShares(arr)
		if err != nil {
			return nil, nil, fmt.Errorf("Amdahl bound from the cost model, at %g req/s: %w", cfg.Load.RatesRPS[i], err)
		}
		shares[i] = sh
	}
	bounds, opsOf := map[string][]simBound{}, map[string][]string{}
	for _, arm := range cfg.Arms[1:] {
		if len(arm.SimOverrides) == 0 || report.IsAAArm(arm.Name) {
			continue
		}
		ops := slices.Sorted(maps.Keys(arm.SimOverrides))
		opsOf[arm.Name] = ops
		for _, sh := range shares {
			var b simBound
			sumOverS := 0.0
			for _, op := range ops {
				f := sh[op]
				b.f += f
				b.fs = append(b.fs, f)
				if fa := arm.SimOverrides[op]; !fa.IsCeiling() {
					sumOverS += f / fa.Factor
				}
			}
			b.bound = 1 / ((1 - b.f) + sumOverS)
			if sumOverS > 0 {
				b.s = b.f / sumOverS
			}
			bounds[arm.Name] = append(bounds[arm.Name], b)
		}
	}
	return bounds, opsOf, nil
}

// preRunBound is one candidate's Amdahl bound known before any request is
// sent (simArmBounds), over the run's loads.
type preRunBound struct {
	arm string
	// ops describes what the arm changes: "rmsnorm 2.5× faster, f 0.026".
	ops string
	// lo, hi are the bound's range over the loads (speedup, ≥ 1).
	lo, hi float64
	// profiled is true when the arm changes amdahl.target_op: the run
	// measures its bound from the baseline's profile (amdahlSection).
	profiled bool
}

// gain is the most the arm can gain in service time, a fraction: 1 − 1/bound
// at the load where the bound is highest.
func (b preRunBound) gain() float64 { return 1 - 1/b.hi }

// preRunBounds is simArmBounds over the loads, per arm in config order.
func preRunBounds(cfg Config, scheds []traces.Schedule) ([]preRunBound, error) {
	bounds, opsOf, err := simArmBounds(cfg, scheds)
	if err != nil {
		return nil, err
	}
	var out []preRunBound
	for _, arm := range cfg.Arms[1:] {
		bs, ok := bounds[arm.Name]
		if !ok {
			continue
		}
		_, touches := arm.SimOverrides[cfg.Amdahl.TargetOp]
		b := preRunBound{arm: arm.Name, lo: math.Inf(1), hi: math.Inf(-1), profiled: touches && cfg.Amdahl.TargetOp != ""}
		var parts []string
		for k, op := range opsOf[arm.Name] {
			fLo, fHi := math.Inf(1), math.Inf(-1)
			for _, sb := range bs {
				fLo, fHi = min(fLo, sb.fs[k]), max(fHi, sb.fs[k])
			}
			what := fmt.Sprintf("%g× faster", arm.SimOverrides[op].Factor)
			if arm.SimOverrides[op].IsCeiling() {
				what = "removed (ceiling)"
			}
			parts = append(parts, fmt.Sprintf("%s %s, f %s", op, what, rangeText(fLo, fHi, "%.3f")))
		}
		for _, sb := range bs {
			b.lo, b.hi = min(b.lo, sb.bound), max(b.hi, sb.bound)
		}
		b.ops = strings.Join(parts, "; ")
		out = append(out, b)
	}
	return out, nil
}

// rangeText is "a" when a and b print alike, else "a–b".
func rangeText(a, b float64, format string) string {
	sa, sb := fmt.Sprintf(format, a), fmt.Sprintf(format, b)
	if sa == sb {
		return sa
	}
	return sa + "–" + sb
}

// noiseResolution is the resolution a simulated run can expect from the
// simulator's noise model (server.sim.noise) when nothing else says it: the
// run-to-run half-width of a ratio (DESIGN.md, "Arms, interleaving,
// statistics") with the block log ratio's standard deviation s = √2 ·
// run_sigma (two cells' independent factors), R = repetitions blocks and ν
// = R (the A/A replicate) + (R − 1) per other arm: e^(t(ν)·s/√R) − 1, t
// at 95 %. It is
// a floor: queueing amplifies the factor under load, and the interval
// inside the cells adds to it. how says where it comes from; ok is false
// without noise or without a degree of freedom.
func noiseResolution(cfg Config) (e float64, how string, ok bool) {
	if cfg.Server.Kind != servers.Sim || cfg.Server.Sim == nil || !(cfg.Server.Sim.Noise.RunSigma > 0) {
		return 0, "", false
	}
	r := max(cfg.Repetitions, 1)
	df := (len(cfg.Arms) - 1) * (r - 1)
	if cfg.Extra.Resolution.aa() {
		df += r
	}
	if df == 0 {
		return 0, "", false
	}
	sigma := cfg.Server.Sim.Noise.RunSigma
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(0.975)
	e = math.Expm1(t * math.Sqrt2 * sigma / math.Sqrt(float64(r)))
	return e, fmt.Sprintf("the simulator's noise model: server.sim.noise.run_sigma %g, %d repetitions, %d degrees of freedom; an expectation, not a bound: a run measures its own, which can be narrower or wider, wider under load", sigma, r, df), true
}

// announceBounds says, before the run spends time on any cell, each
// candidate's Amdahl bound and how it stands against the resolution the run
// is expected to reach (decision.expected_resolution; unknown when unset). A
// candidate whose most possible gain is below that resolution is a warning:
// the run will likely find no difference it can detect. Another server kind
// gets one line: f is measured in the run.
func announceBounds(log, warn io.Writer, cfg Config, scheds []traces.Schedule) {
	bounds, err := preRunBounds(cfg, scheds)
	if err != nil {
		fmt.Fprintf(warn, "warning: %v\n", err)
		return
	}
	if cfg.Server.Kind != servers.Sim {
		if cfg.Amdahl.TargetOp == "" {
			// What the answer will say (amdahlSection): no op to profile.
			fmt.Fprintf(log, "before the run: Amdahl bound: not measured: %s\n", amdahlNoTarget)
			return
		}
		fmt.Fprintf(log, "before the run: the Amdahl bounds are measured in it (f from the baseline's profile)\n")
		return
	}
	if len(bounds) == 0 {
		return
	}
	var expected float64
	if d := cfg.Extra.Decision; d != nil {
		expected = d.ExpectedResolution
	}
	res := "expected resolution unknown (decision.expected_resolution is not set; a previous run's A/A gives it: results.json stats.resolution); this run measures its own"
	if expected > 0 {
		res = "expected resolution ±" + fmt.Sprintf("%.2g %%", 100*expected) + " (decision.expected_resolution)"
	} else if e, how, ok := noiseResolution(cfg); ok {
		expected, res = e, "noise model's expected resolution ±"+fmt.Sprintf("%.2g %%", 100*e)+" ("+how+")"
	}
	fmt.Fprintf(log, "before the run: Amdahl bounds from the simulator's cost model over this run's schedules (the most a candidate can gain in service time; queueing under load can amplify a gain past it); %s:\n", res)
	for _, b := range bounds {
		line := fmt.Sprintf("%s: %s: bound %s (at most %s faster)", b.arm, b.ops, rangeText(b.lo, b.hi, "%.4f"), rangeText(100*(1-1/b.lo), 100*(1-1/b.hi), "%.2g")+" %")
		if b.profiled {
			// amdahlSection measures this arm's bound from the baseline's
			// profile: a second estimate, whose last digits can differ.
			line += "; the answer's bound is the one the run measures from the baseline's profile (amdahl.target_op " + cfg.Amdahl.TargetOp + "), a second estimate whose last digits can differ from this model's"
		}
		fmt.Fprintf(log, "  %s\n", line)
		if expected > 0 && b.gain() < expected {
			fmt.Fprintf(warn, "warning: before the run: %s can gain at most %.2g %% in service time, below the expected resolution ±%.2g %%: the run will likely find no difference it can detect\n", b.arm, 100*b.gain(), 100*expected)
		}
	}
}
