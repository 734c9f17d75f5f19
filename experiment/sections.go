package experiment

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/transferlab/transferlab/amdahl"
	"github.com/transferlab/transferlab/analysis"
	"github.com/transferlab/transferlab/cost"
	"github.com/transferlab/transferlab/energy"
	"github.com/transferlab/transferlab/integrate"
	"github.com/transferlab/transferlab/render"
	"github.com/transferlab/transferlab/report"
)

// addSections fills the cross-cell sections of the results: Amdahl (f from
// the baseline's profiles, s from the override, the bound), energy and cost
// per cell, then the statistics and verdicts (analysis.Analyze), and finally
// the transfer efficiency from the measured speedups Analyze filled in.
func (r *runner) addSections() {
	r.res.Amdahl = r.amdahlSection()
	r.res.Energy, r.res.Cost = r.energyCostSections()
	r.res.Validation = r.validationSection()
	if len(r.res.Cells) == 0 {
		return
	}
	truth, err := r.simTruth()
	if err != nil {
		fmt.Fprintf(r.warn, "warning: the simulator's true ratios not computed: %v\n", err)
	}
	r.res.SimTruth = truth
	rule := r.cfg.Extra.Decision.rule(r.cfg.Arms[0].Name, r.cfg.Seed)
	if err := analysis.Analyze(r.res, rule); err != nil {
		fmt.Fprintf(r.warn, "warning: statistics and verdicts not computed: %v\n", err)
		return
	}
	if r.res.Amdahl == nil {
		return
	}
	for i := range r.res.Amdahl.Loads {
		l := &r.res.Amdahl.Loads[i]
		for _, m := range l.Measured {
			if m.Metric == "e2e" && m.Stat == "mean" && m.Value.Reps == 0 {
				// Refused (too few ok requests, or a cell that lost more
				// than analysis.MaxNotOKShare of them): no efficiency, and the
				// reason where the efficiency would be.
				l.Verdict, l.Note = string(amdahl.VerdictUnknown), "transfer efficiency not computed: the measured E2E mean speedup is "+m.Value.Note
				continue
			}
			if m.Metric == "e2e" && m.Stat == "mean" && m.Value.Reps > 0 && !math.IsNaN(m.Value.Value) && m.Value.Value > 0 {
				if e := amdahl.TransferEfficiency(m.Value.Value, l.Bound); !math.IsNaN(e) && !math.IsInf(e, 0) {
					l.TransferEfficiency = e
					l.TransferMetric = "e2e mean"
					efficiencyInterval(l, m.Value)
				}
				l.Verdict, l.Note = boundVerdict(m.Value, *l, r.cfg.Load.RatesRPS)
				if gap := ablationGap(r.res.Amdahl, l.Candidate, l.OfferedLoadRPS); gap != "" && l.Verdict == string(amdahl.VerdictAbove) {
					l.Note += " Measured by ablation (ceiling arm " + r.res.Ceiling + "), E2E mean: " + gap + "."
				}
			}
		}
	}
}

// efficiencyInterval gives l's transfer efficiency its interval from the
// measured speedup m's and the bound's (amdahl.Compare: the corners; an
// exact bound when none is recorded), and, when m's interval contains 1,
// the note that the efficiency is not separable from 0: any share of the
// bound's gain, or none, or a loss, fits a gain the run did not resolve.
func efficiencyInterval(l *report.AmdahlLoad, m report.Estimate) {
	l.TransferEfficiencyLow, l.TransferEfficiencyHigh, l.TransferEfficiencyNote = nil, nil, ""
	if !m.Interval {
		return
	}
	blo, bhi := l.BoundLow, l.BoundHigh
	if blo == 0 && bhi == 0 {
		blo, bhi = l.Bound, l.Bound
	}
	c := amdahl.Compare(amdahl.Estimate{Value: amdahl.Num(m.Value), Lo: amdahl.Num(m.Low), Hi: amdahl.Num(m.High)},
		amdahl.Estimate{Value: amdahl.Num(l.Bound), Lo: amdahl.Num(blo), Hi: amdahl.Num(bhi)})
	if c.Efficiency.Lo.Defined() && c.Efficiency.Hi.Defined() {
		lo, hi := float64(c.Efficiency.Lo), float64(c.Efficiency.Hi)
		l.TransferEfficiencyLow, l.TransferEfficiencyHigh = &lo, &hi
	}
	if m.Low <= 1 && 1 <= m.High {
		l.TransferEfficiencyNote = fmt.Sprintf("not separable from 0: the measured %s speedup's interval [%s, %s] contains 1 (no change)", l.TransferMetric, report.Num(m.Low), report.Num(m.High))
	}
}

// ablationGap is the ablation's profile-vs-ablation note on E2E mean for
// cand at load ("" when there is none).
func ablationGap(a *report.AmdahlSection, cand string, load float64) string {
	for _, al := range a.Ablation {
		if al.Candidate != cand || al.OfferedLoadRPS != load {
			continue
		}
		for _, m := range al.Metrics {
			if m.Metric == "e2e" && m.Stat == "mean" {
				return m.ProfileGap
			}
		}
	}
	return ""
}

// boundVerdict places a measured speedup against the bound's interval
// (amdahl.Compare) and says what it means for this load.
func boundVerdict(m report.Estimate, l report.AmdahlLoad, rates []float64) (string, string) {
	me := amdahl.Exact(m.Value)
	if m.Interval {
		me = amdahl.Estimate{Value: amdahl.Num(m.Value), Lo: amdahl.Num(m.Low), Hi: amdahl.Num(m.High), N: m.Reps, Method: "bootstrap over repetitions"}
	}
	be := amdahl.Estimate{Value: amdahl.Num(l.Bound), Lo: amdahl.Num(l.BoundLow), Hi: amdahl.Num(l.BoundHigh), N: 1, Method: "bound"}
	c := amdahl.Compare(me, be)
	noise := ""
	if !m.Interval {
		noise = " One repetition: the measured value has no interval, so run-to-run noise (often ±1–2 % on a shared machine) is not excluded."
	}
	if !m.Interval && c.GapPct.Defined() && math.Abs(float64(c.GapPct)) <= 2 {
		return string(c.Verdict), fmt.Sprintf("mean E2E speedup %.4f vs bound %.4f (%+.1f %%): within the ±2 %% run-to-run noise of a single repetition, so not evidence either way; run repetitions ≥ 3 for an interval.", m.Value, l.Bound, float64(c.GapPct))
	}
	highest := l.OfferedLoadRPS >= slices.Max(rates)
	switch c.Verdict {
	case amdahl.VerdictAbove:
		why := "At light load this means f or s is underestimated (e.g. f counts kernel time while the kernel also removes launch gaps)."
		if highest || l.OfferedLoadRPS > rates[0] {
			why = "The bound is on service time at a fixed load; near or past saturation a faster server also drains its queue faster, which cuts waiting time by more than the service time it saves (queueing amplification), so the end-to-end gain can exceed the bound. At light load it would instead mean f or s is underestimated."
		}
		return string(c.Verdict), fmt.Sprintf("mean E2E speedup %.4f is above the bound %.4f (%+.1f %%). %s%s", m.Value, l.Bound, float64(c.GapPct), why, noise)
	case amdahl.VerdictBelow:
		return string(c.Verdict), fmt.Sprintf("mean E2E speedup %.4f is below the bound %.4f (%+.1f %%): part of the isolated gain did not reach the service (host-side overhead, launches, other work overlapping the op), or the difference is noise.%s", m.Value, l.Bound, float64(c.GapPct), noise)
	case amdahl.VerdictInside:
		if m.Interval {
			return string(c.Verdict), fmt.Sprintf("mean E2E speedup %.4f [%.4f, %.4f] and the bound %.4f [%.4f, %.4f]: the two intervals overlap.", m.Value, m.Low, m.High, l.Bound, l.BoundLow, l.BoundHigh)
		}
		return string(c.Verdict), fmt.Sprintf("mean E2E speedup %.4f is within the bound's interval [%.4f, %.4f].%s", m.Value, l.BoundLow, l.BoundHigh, noise)
	}
	return string(c.Verdict), "the measured or bound value is undefined"
}

// amdahlSection computes, per candidate and offered load, f from the
// baseline arm's profiles at that load (pooled over repetitions, bootstrap
// over them when there are several), s from the candidate's override, and the
// bound with its interval.
//
// A simulated candidate whose overrides leave amdahl.target_op alone (or
// with no target_op set) gets its bound per load from the cost model over
// the load's schedule (simArmBounds: f of the ops it changes), labelled so.
// amdahlNoTarget is why a run with no amdahl.target_op (and no simulated
// candidate whose bound the cost model gives) has no Amdahl bound: said
// before the run (announceBounds) and in the results alike.
const amdahlNoTarget = "amdahl.target_op is not set in the config"

func (r *runner) amdahlSection() *report.AmdahlSection {
	target := r.cfg.Amdahl.TargetOp
	modelled, modelledOps, merr := simArmBounds(r.cfg, r.scheds)
	if merr != nil {
		fmt.Fprintf(r.warn, "warning: amdahl: %v\n", merr)
	}
	if target == "" && len(modelled) == 0 {
		return &report.AmdahlSection{NotMeasured: amdahlNoTarget}
	}
	baseline := r.cfg.Arms[0].Name
	sec := &report.AmdahlSection{}
	var problems []string
	// f comes from complete baseline cells only; with none (a run stopped
	// early) that is the one reason, said once, not once per load.
	completeBaseline := slices.ContainsFunc(r.cells, func(m measured) bool { return m.key.arm == baseline && m.summary.Complete })
	for _, arm := range r.cfg.Arms[1:] {
		if arm.IsCeiling() {
			continue // a timing-only ablation: no s, no bound of its own
		}
		if _, touches := arm.SimOverrides[target]; !touches && len(modelled[arm.Name]) > 0 {
			sec.Loads = append(sec.Loads, r.modelledLoads(arm.Name, target, modelled[arm.Name], modelledOps[arm.Name])...)
			continue
		}
		if target == "" {
			continue
		}
		s, err := r.isolatedSpeedup(arm, target)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", arm.Name, err))
			continue
		}
		for li := range r.cfg.Load.RatesRPS {
			if !completeBaseline {
				break
			}
			l, problem := r.profiledLoad(arm.Name, li, s)
			if problem != "" {
				problems = append(problems, problem)
				continue
			}
			sec.Loads = append(sec.Loads, l)
		}
	}
	if !completeBaseline {
		why := "f is measured from the baseline arm's profiled cells, and none of them ran to its end"
		if r.res != nil && r.res.IncompleteReason != "" {
			why += " (" + r.res.IncompleteReason + ")"
		}
		problems = append([]string{"no complete baseline cell (" + baseline + "): " + why}, problems...)
	}
	if len(sec.Loads) == 0 {
		// One line: the console prints it after "Amdahl: not measured: ".
		sec.NotMeasured = "no candidate arm with a profiled baseline"
		if len(problems) > 0 {
			sec.NotMeasured = strings.Join(problems, "; ")
		}
	}
	for _, p := range problems {
		fmt.Fprintf(r.warn, "warning: amdahl: %s\n", p)
	}
	return sec
}

// modelledLoads are candidate's bounds from the simulator's cost model, one a
// load (simArmBounds: bounds, over the ops it changes), for a candidate whose
// overrides leave amdahl.target_op (the op the baseline's profile measures)
// alone.
func (r *runner) modelledLoads(candidate, target string, bounds []simBound, changed []string) []report.AmdahlLoad {
	ops := strings.Join(changed, ", ")
	why := "amdahl.target_op is not set, so the baseline's profile measures no op"
	if target != "" {
		why = "it changes " + ops + ", and the baseline's profile measures only amdahl.target_op (" + target + ")"
	}
	var out []report.AmdahlLoad
	for li, b := range bounds {
		out = append(out, report.AmdahlLoad{
			Candidate: candidate, OfferedLoadRPS: r.cfg.Load.RatesRPS[li],
			FWall: b.f, S: b.s, Bound: b.bound, BoundLow: b.bound, BoundHigh: b.bound,
			FSource:      "sim cost model (" + ops + "'s share of the modelled step time over this load's schedule, virtual-time replay)",
			FFrom:        report.FFromCostModel,
			FNotMeasured: why + "; its f_wall is " + ops + "'s share of the simulator's modelled step time",
			STiming:      "exact",
		})
	}
	return out
}

// profiledLoad is candidate's bound at load index li from the baseline's
// profiles there (complete cells, pooled over repetitions, f bootstrapped
// over them) and its isolated speedup s; problem says why there is none.
func (r *runner) profiledLoad(candidate string, li int, s amdahl.Estimate) (l report.AmdahlLoad, problem string) {
	rate := r.cfg.Load.RatesRPS[li]
	var ws []amdahl.WindowSample
	var frs []amdahl.Fractions
	for _, m := range r.cells {
		if m.key.arm != r.cfg.Arms[0].Name || m.key.load != li || m.profile == nil || !m.summary.Complete {
			continue
		}
		frs = append(frs, *m.profile)
		ws = append(ws, m.profile.Sample(fmt.Sprintf("rep %d", m.key.rep)))
	}
	if len(ws) == 0 {
		return l, fmt.Sprintf("no baseline profile at %g req/s", rate)
	}
	f, err := amdahl.FWallEstimate(ws, amdahl.Seed(uint64(r.cfg.Seed)))
	if err != nil {
		return l, fmt.Sprintf("f at %g req/s: %v", rate, err)
	}
	b, err := amdahl.BoundFromEstimates(f, s)
	if err != nil {
		return l, fmt.Sprintf("bound at %g req/s: %v", rate, err)
	}
	fHook, spanPct, kernelPct := r.hookCheck(rate)
	return report.AmdahlLoad{
		FWallHook:            fHook,
		HookVsProfileSpanPct: spanPct,
		HookVsProfilePct:     kernelPct,
		Candidate:            candidate,
		OfferedLoadRPS:       rate,
		FGPU: pooledOf(frs, func(f amdahl.Fractions) (amdahl.Num, time.Duration, time.Duration) {
			return f.FGPU, f.TargetGPU, f.Busy
		}),
		FWall: float64(f.Value),
		FExcl: pooledOf(frs, func(f amdahl.Fractions) (amdahl.Num, time.Duration, time.Duration) {
			return f.FExcl, f.TargetExclusive, f.ActiveWall
		}),
		S:         float64(s.Value),
		Bound:     float64(b.Value),
		BoundLow:  float64(b.Lo),
		BoundHigh: float64(b.Hi),
		FSource:   cmp.Or(r.profileSource(rate), "the baseline's profile in the run: "+frs[0].Source+" ("+frs[0].ActiveFrom+" active time)"),
		FFrom:     report.FFromProfile,
		STiming:   s.Method,
	}, ""
}

// isolatedSpeedup is s of one candidate: the sim's override factor (exact, by
// construction) or the validation report's frequency-weighted geometric mean.
func (r *runner) isolatedSpeedup(arm ArmConfig, target string) (amdahl.Estimate, error) {
	if f, ok := arm.SimOverrides[target]; ok {
		return amdahl.Exact(f.Factor), nil
	}
	if len(arm.SimOverrides) > 0 {
		return amdahl.Estimate{}, fmt.Errorf("its sim_overrides do not touch the target op %q (the bound would be 1)", target)
	}
	return r.validatedSpeedup(arm)
}

// pooledOf pools one fraction over the windows as f_wall is pooled
// (amdahl.FWallEstimate: Σ numerator / Σ denominator, each window weighted by
// its denominator), so f_gpu, f_wall and f_excl of a load are comparable (a
// mean of per-window ratios put f_excl 0.0969 above the pooled f_wall 0.0962
// in results/h200-2026-11-29/reps). get returns the window's fraction,
// numerator and denominator. It is nil when any window leaves the fraction
// undefined (e.g. f_gpu from hook timings, which see no other kernel).
func pooledOf(frs []amdahl.Fractions, get func(amdahl.Fractions) (amdahl.Num, time.Duration, time.Duration)) *float64 {
	var num, den time.Duration
	for _, f := range frs {
		v, n, d := get(f)
		if !v.Defined() {
			return nil
		}
		num += n
		den += d
	}
	if den <= 0 {
		return nil
	}
	m := float64(num) / float64(den)
	return &m
}

// cellEnergy is m's energy window as the energy section uses it: trimmed to
// the cell's measured window, or with a warning saying why not. m.energy
// must be set.
func cellEnergy(m measured) energy.Window {
	w := *m.energy
	if m.energyTrimmed || m.summary.WindowEnd <= m.summary.WindowStart {
		return w
	}
	tw, err := w.Trim(m.summary.Start.Add(m.summary.WindowStart), m.summary.Start.Add(m.summary.WindowEnd))
	if err != nil {
		w.Warnings = append(slices.Clone(w.Warnings), "not trimmed to the measured window: "+err.Error())
		return w
	}
	return tw
}

// energyCostSections converts each cell's energy window (trimmed to the
// cell's measured window) and cost inputs into the report's sections.
func (r *runner) energyCostSections() (*report.EnergySection, *report.CostSection) {
	es := &report.EnergySection{}
	cs := &report.CostSection{}
	if r.cfg.Energy.Disabled {
		es.NotMeasured = "energy sampling is disabled in the config (energy.disabled: true)"
	}
	if r.cfg.Extra.Cost == nil {
		cs.NotMeasured = "no cost inputs in the config (cost: price_per_gpu_hour, currency, price_date, gpus, ...); no price is built in"
	}
	for i, m := range r.cells {
		c := r.res.Cells[i]
		// Energy per token and cost per token use the same numerator as
		// throughput: output tokens whose events fell inside the measured
		// window (loadgen.Window), over the same window.
		windowTokens := int(math.Round(c.WindowOutputTokens))
		var energyJ *float64
		if m.energy != nil {
			w := cellEnergy(m)
			ec := report.EnergyCell{Arm: c.Arm, OfferedLoadRPS: c.OfferedLoadRPS, Repetition: c.Repetition, Available: w.Available, UnavailableReason: w.UnavailableReason, Source: w.Label}
			if m.eerr != nil && !errors.Is(m.eerr, energy.ErrUnavailable) && ec.UnavailableReason == "" {
				ec.UnavailableReason = m.eerr.Error()
			}
			if w.EnergyJ == nil && w.Available {
				ec.Available = false
				ec.UnavailableReason = w.EnergyUnavailableReason
			}
			// A figure the sampler did not measure is listed in Missing, never written as 0.
			setF := func(key string, dst *float64, v *float64) {
				if v == nil {
					ec.Missing = append(ec.Missing, key)
					return
				}
				*dst = *v
			}
			setU := func(key string, dst *uint64, v *uint64) {
				if v == nil {
					ec.Missing = append(ec.Missing, key)
					return
				}
				*dst = *v
			}
			energyJ = w.EnergyJ
			setF("energy_j", &ec.EnergyJ, w.EnergyJ)
			jt, okT := energy.JPerToken(w, windowTokens)
			setF("j_per_output_token", &ec.JPerOutputToken, optional(jt, okT))
			jr, okR := energy.JPerRequest(w, c.States["ok"])
			setF("j_per_request", &ec.JPerRequest, optional(jr, okR))
			setF("mean_power_w", &ec.MeanPowerW, w.PowerMeanW)
			setF("peak_power_w", &ec.PeakPowerW, w.PowerPeakW)
			setF("idle_power_w", &ec.IdlePowerW, w.IdlePowerW)
			setU("peak_vram_bytes", &ec.PeakVRAMBytes, w.VRAMPeakBytes)
			setU("steady_vram_bytes", &ec.SteadyVRAMBytes, w.VRAMSteadyBytes)
			ec.EnergyHeadline, ec.PowerIntegralJ = w.EnergyHeadline, w.PowerIntegralJ
			if w.Source == energy.SourceSimulated && ec.EnergyHeadline != "" {
				// The simulated sampler integrates a power model; there is no counter.
				ec.EnergyHeadline = report.SimulatedEnergyHeadline
			}
			ec.DisagreementPct, ec.DisagreementFlagged = w.DisagreementPct, w.DisagreementFlagged
			ec.QuantisationPct, ec.BelowResolution = w.QuantisationPct, w.BelowResolution
			ec.Throttled, ec.ProcessVRAMPeakBytes, ec.Warnings = w.Throttled, w.ProcessVRAMPeakBytes, w.Warnings
			if c.NotMeasured != "" {
				// No measured window to trim to: the figures are of the cell's
				// whole energy window (warm-up only), never of measured requests.
				ec.Warnings = append(ec.Warnings, "this energy window covers no measured request ("+c.NotMeasured+"): its figures are of the warm-up only")
			}
			for _, t := range w.ThrottleReasons {
				ec.ThrottleReasons = append(ec.ThrottleReasons, fmt.Sprintf("%s (%d samples)", t.Reason, t.Samples))
			}
			es.Cells = append(es.Cells, ec)
		}
		if in := r.cfg.Extra.Cost; in != nil && c.Incomplete != "" {
			fmt.Fprintf(r.warn, "warning: no cost for %s at %g req/s: the cell is incomplete (%s)\n", c.Arm, c.OfferedLoadRPS, c.Incomplete)
		} else if in != nil && c.WindowS == nil {
			fmt.Fprintf(r.warn, "warning: no cost for %s at %g req/s: not measured: %s\n", c.Arm, c.OfferedLoadRPS, c.NotMeasured)
		} else if in != nil {
			window := time.Duration(*c.WindowS * float64(time.Second))
			res, err := cost.Compute(*in, window, windowTokens, windowTokens+c.InputTokens, energyJ)
			if err == nil && (res.CostPer1MOutputTokens == nil || res.CostPer1MTotalTokens == nil) {
				err = fmt.Errorf("undefined (%s)", strings.Join(res.Notes, "; "))
			}
			if err != nil {
				fmt.Fprintf(r.warn, "warning: cost of %s at %g req/s: %v\n", c.Arm, c.OfferedLoadRPS, err)
				continue
			}
			cs.Cells = append(cs.Cells, report.CostCell{
				Arm: c.Arm, OfferedLoadRPS: c.OfferedLoadRPS, Repetition: c.Repetition,
				Currency: in.Currency, PricePerGPUHour: in.PricePerGPUHour, PriceDate: in.PriceDate, PriceSource: in.PriceSource, GPUs: in.GPUs,
				UtilisationAssumption: in.Utilisation, WindowS: *c.WindowS, OutputTokens: windowTokens, TotalTokens: windowTokens + c.InputTokens,
				EnergyPricePerKWh:           in.EnergyPricePerKWh,
				EnergyPriceSource:           in.EnergyPriceSource,
				CostPer1MOutputTokens:       orZero(res.CostPer1MOutputTokens),
				CostPer1MTotalTokens:        orZero(res.CostPer1MTotalTokens),
				EnergyCostPer1MOutputTokens: orZero(res.EnergyCostPer1MOutputTokens),
			})
		}
	}
	if len(es.Cells) == 0 && es.NotMeasured == "" {
		es.NotMeasured = "no energy window was recorded"
	}
	return es, cs
}

// optional turns a (value, ok) pair into a pointer (nil when not ok).
func optional(v float64, ok bool) *float64 {
	if !ok {
		return nil
	}
	return &v
}

// orZero reads an optional cost figure that may be absent only by design
// (no energy price given: the field is then omitted from results.json).
func orZero(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// printAmdahl writes the console's measured-vs-bound table.
func printAmdahl(w io.Writer, res *report.Results) {
	a := res.Amdahl
	if a == nil {
		return
	}
	fmt.Fprintln(w)
	if a.NotMeasured != "" && len(a.Ablation) > 0 {
		fmt.Fprintf(w, "Amdahl profile estimate: not measured: %s\n", strings.TrimSpace(a.NotMeasured))
		printAblation(w, a)
		return
	}
	if a.NotMeasured != "" {
		// A results file from an older build may hold several reasons, one a line.
		lines := strings.Split(strings.TrimSpace(a.NotMeasured), "\n")
		if len(lines) == 1 {
			fmt.Fprintf(w, "Amdahl: not measured: %s\n", lines[0])
			return
		}
		fmt.Fprintln(w, "Amdahl: not measured:")
		for _, l := range lines {
			fmt.Fprintf(w, "  - %s\n", l)
		}
		return
	}
	fmt.Fprintf(w, "Amdahl bound vs measured %s, every column:\n", report.SpeedupLabel("", ""))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "candidate\tload req/s\tf_gpu\tf_wall\ts\tbound\tTTFT mean\tTPOT mean\tE2E mean\tE2E p99\tefficiency (E2E mean)\t")
	above := false
	for _, l := range a.Loads {
		get := func(metric, stat string) string {
			for _, m := range l.Measured {
				if m.Metric == metric && m.Stat == stat && m.Value.Reps > 0 && !math.IsNaN(m.Value.Value) {
					return fmt.Sprintf("%.4f", m.Value.Value)
				}
			}
			return "-"
		}
		eff := "-"
		if l.TransferMetric != "" {
			eff = report.TransferEfficiencyText(l)
			if render.ExceedsBound(l) {
				eff, above = eff+"*", true
			}
		}
		fgpu := "-"
		if l.FGPU != nil {
			fgpu = fmt.Sprintf("%.4f", *l.FGPU)
		}
		fmt.Fprintf(tw, "%s\t%g\t%s\t%.4f\t%.3g\t%.4f\t%s\t%s\t%s\t%s\t%s\t\n", l.Candidate, l.OfferedLoadRPS, fgpu, l.FWall, l.S, l.Bound,
			get("ttft", "mean"), get("tpot", "mean"), get("e2e", "mean"), get("e2e", "p99"), eff)
	}
	tw.Flush()
	if above {
		fmt.Fprintf(w, "  * %s\n", render.AboveBoundNote)
	}
	// Why f_gpu is "-", once per candidate.
	said := map[string]bool{}
	for _, l := range a.Loads {
		if l.FGPU == nil && l.FNotMeasured != "" && !said[l.Candidate] {
			said[l.Candidate] = true
			fmt.Fprintf(w, "  - %s: f_gpu not measured: %s\n", l.Candidate, l.FNotMeasured)
		}
	}
	printAblation(w, a)
	for _, l := range a.Loads {
		if l.TransferEfficiencyNote != "" {
			fmt.Fprintf(w, "  - %s at %g req/s: transfer efficiency %s: any share of the bound's gain, or none, fits it\n", l.Candidate, l.OfferedLoadRPS, l.TransferEfficiencyNote)
		}
	}
	// Why the mean speedups and the efficiency of a row are "-" (a p99
	// refused for its sample size is the table's usual "-": not repeated).
	for _, l := range a.Loads {
		for _, m := range l.Measured {
			if m.Stat == "mean" && m.Value.Reps == 0 {
				fmt.Fprintf(w, "  - %s at %g req/s: speedups and efficiency not computed: %s\n", l.Candidate, l.OfferedLoadRPS, m.Value.Note)
				break
			}
		}
	}
}

// validationSection reads each candidate override's validation report (the
// run already refused a missing, stale or failing one).
func (r *runner) validationSection() *report.ValidationSection {
	sec := &report.ValidationSection{}
	for _, arm := range r.cfg.Arms {
		if arm.Override == nil || arm.IsCeiling() {
			continue // a ceiling is never validated
		}
		o := *arm.Override
		rep, err := integrate.CheckValidation(o)
		if rep == nil {
			msg := "mode " + o.EffectiveMode() + " swaps nothing"
			if err != nil {
				msg = err.Error()
			}
			sec.Candidates = append(sec.Candidates, report.ValidationCandidate{Candidate: arm.Name, Verdict: "fail", FailedGates: []string{msg}})
			continue
		}
		vc := report.ValidationCandidate{Candidate: arm.Name, ReportPath: rep.Path, ReportSHA256: rep.SHA256, Verdict: rep.Verdict,
			UncoveredShapes: rep.CapturedSignatures - rep.ValidatedSignatures}
		if rep.FailedGate != "" {
			vc.FailedGates = []string{rep.FailedGate + " (" + rep.FailedSet + "): " + rep.Reason}
		}
		for _, s := range rep.Shapes {
			vc.Shapes = append(vc.Shapes, report.ShapeSpeedup{Shape: string(s.Signature), Count: s.Count, Stress: s.Set != "captured", Speedup: s.Speedup})
		}
		if rep.Speedup.S != nil {
			vc.S = *rep.Speedup.S
		}
		sec.Candidates = append(sec.Candidates, vc)
		if r.res.Hook != nil {
			for i := range r.res.Hook.Arms {
				if r.res.Hook.Arms[i].Arm == arm.Name {
					r.res.Hook.Arms[i].ReportSHA256 = rep.SHA256
				}
			}
		}
	}
	if len(sec.Candidates) == 0 {
		return nil
	}
	return sec
}

// printAblation writes the console's ablation table (f by ablation, s in
// situ, ceiling and candidate speedups), when the run had a ceiling arm.
func printAblation(w io.Writer, a *report.AmdahlSection) {
	if len(a.Ablation) == 0 {
		return
	}
	fmt.Fprintf(w, "Amdahl by ablation (ceiling arm %s: %s):\n", a.Ablation[0].Ceiling, report.CeilingLabel)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "candidate\tload req/s\tstatistic\tf_ablation\ts in situ\tceiling speedup\tcandidate speedup\tefficiency vs ceiling\tprofile bound\t")
	v := func(e report.Estimate) string {
		if e.Reps == 0 {
			return "-"
		}
		return fmt.Sprintf("%.4f", e.Value)
	}
	for _, al := range a.Ablation {
		for _, m := range al.Metrics {
			bp := "-"
			if m.BoundProfile != nil {
				bp = fmt.Sprintf("%.4f", *m.BoundProfile)
			}
			fmt.Fprintf(tw, "%s\t%g\t%s %s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", al.Candidate, al.OfferedLoadRPS, m.Metric, m.Stat,
				v(m.FAblation), v(m.SInSitu), v(m.CeilingSpeedup), v(m.CandidateSpeedup), v(m.TransferEfficiency), bp)
		}
	}
	tw.Flush()
	for _, al := range a.Ablation {
		for _, m := range al.Metrics {
			if m.SInSitu.Reps == 0 && m.SInSitu.Note != "" {
				fmt.Fprintf(w, "  - %s at %g req/s, %s %s: s in situ %s\n", al.Candidate, al.OfferedLoadRPS, m.Metric, m.Stat, m.SInSitu.Note)
			}
		}
	}
}
