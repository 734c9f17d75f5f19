package report

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// queueSeries is n latencies (ms) with the dependence a queue gives:
// log-latency an AR(1) process (φ = 0.9) around ln(1000), so a burst
// slows a run of neighbouring requests together.
func queueSeries(rng *rand.Rand, n int) []float64 {
	out := make([]float64, n)
	x := 0.0
	for i := range out {
		x = 0.9*x + 0.3*rng.NormFloat64()
		out[i] = 1000 * math.Exp(x)
	}
	return out
}

// pairedCells are a baseline cell and a cell of arm whose requests take
// effect × the baseline's time, each with independent lognormal noise of
// sd sigma, over one shared queue series.
func pairedCells(rng *rand.Rand, arm string, load float64, effect, sigma float64, base []float64) Cell {
	c := Cell{Arm: arm, OfferedLoadRPS: load, WindowS: ptr(10)}
	vals := make([]float64, len(base))
	for i, b := range base {
		v := effect * b * math.Exp(sigma*rng.NormFloat64()-sigma*sigma/2)
		vals[i] = v
		c.Requests = append(c.Requests, RequestFigures{ID: i, E2EMs: ptr(v)})
	}
	c.E2E = BuildDist(vals, DefaultConfidence, 0)
	return c
}

// TestRequestRatioCoverage: on synthetic queue-like data with a known true
// ratio, the 95 % interval of the request-by-request block bootstrap
// contains the truth in ≥ 88 % of 300 seeded trials (binomial sd of the
// coverage ≈ 1.3 points) and is not vacuous (it misses in ≥ 1 %).
func TestRequestRatioCoverage(t *testing.T) {
	t.Parallel()
	const trials, n, truth = 300, 150, 0.9
	bs := bootstrapper{seed: 7, resamples: 400, level: 0.95}
	covered := 0
	rng := rand.New(rand.NewPCG(11, 12))
	for i := range trials {
		base := queueSeries(rng, n)
		num, den := make([]float64, n), make([]float64, n)
		for j, b := range base {
			// Both arms see the shared queue and their own noise; the
			// candidate's expected time is truth × the baseline's.
			den[j] = b * math.Exp(0.1*rng.NormFloat64()-0.005)
			num[j] = truth * b * math.Exp(0.1*rng.NormFloat64()-0.005)
		}
		e := bs.requestRatio(key("trial", i), "mean", pairs{num: [][]float64{num}, den: [][]float64{den}})
		if !e.Interval {
			t.Fatalf("trial %d: no interval: %s", i, e.Note)
		}
		if e.Low <= truth && truth <= e.High {
			covered++
		}
	}
	share := float64(covered) / trials
	t.Logf("coverage %.3f over %d trials", share, trials)
	if share < 0.88 || share > 0.99 {
		t.Errorf("95 %% intervals covered the true ratio in %.1f %% of trials, want 88–99 %%", 100*share)
	}
}

// aaRun is one load with a baseline, its A/A replicate, a candidate 20 %
// faster and one 0.3 % faster, all over one queue series with 2 % noise.
func aaRun(t *testing.T) Results {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 4))
	base := queueSeries(rng, 300)
	r := Results{Complete: true, Manifest: Manifest{ConfigSHA256: "cfg", ArmOrder: []string{"baseline", "big", "small", AAArm("baseline")}}, Trace: TraceInfo{SHA256: "tr"}}
	r.Cells = []Cell{
		pairedCells(rng, "baseline", 4, 1, 0.02, base),
		pairedCells(rng, "big", 4, 0.8, 0.02, base),
		pairedCells(rng, "small", 4, 0.997, 0.02, base),
		pairedCells(rng, AAArm("baseline"), 4, 1, 0.02, base),
	}
	return r
}

// TestResolutionFromAA: the A/A replicate gives a resolution beside every
// ratio; a 20 % gain passes with an interval excluding 1, a 0.3 % one is
// "no difference" naming the resolution; the replicate gets no verdict.
func TestResolutionFromAA(t *testing.T) {
	t.Parallel()
	r := aaRun(t)
	if err := Analyze(&r, DecisionRule{Metric: "e2e", UseMean: true, RegressionMargin: 0.02}); err != nil {
		t.Fatal(err)
	}
	if len(r.Verdicts) != 2 {
		t.Fatalf("%d verdicts, want 2 (big, small; none for the A/A replicate)", len(r.Verdicts))
	}
	var res *Resolution
	for i, q := range r.Stats.Resolution {
		if q.Metric == "e2e" && q.Stat == "mean" {
			res = &r.Stats.Resolution[i]
		}
	}
	if res == nil || res.PlusMinus == nil || *res.PlusMinus <= 0 || *res.PlusMinus > 0.02 {
		t.Fatalf("e2e mean resolution %+v, want a measured one below 2 %%", res)
	}
	for _, v := range r.Verdicts {
		line := VerdictLine(v)
		switch v.Candidate {
		case "big":
			if v.Outcome != "pass" || !strings.Contains(line, "resolution ±") {
				t.Errorf("20 %% gain: %s", line)
			}
		case "small":
			if v.Outcome != "no difference" || !strings.Contains(line, "NO DIFFERENCE: no change in mean E2E this run can detect") || !strings.Contains(line, "resolution ±") {
				t.Errorf("0.3 %% gain: %s", line)
			}
		}
	}
	for _, q := range r.Stats.Ratios {
		if q.Metric != "e2e" || q.Stat != "mean" {
			continue
		}
		if q.Resolution == nil || *q.Resolution != *res.PlusMinus || q.Value.Requests != 300 {
			t.Errorf("%s ratio %+v lacks the resolution or the request pairing", q.Candidate, q)
		}
		if q.Candidate == "big" && (q.Value.High >= 1 || q.Value.Low > 0.8 || q.Value.High < 0.8) {
			t.Errorf("big's interval [%v, %v] should exclude 1 and contain 0.8", q.Value.Low, q.Value.High)
		}
	}
	for _, g := range r.Stats.CapacityGain {
		if IsAAArm(g.Candidate) {
			t.Error("the A/A replicate got a capacity gain")
		}
	}
}

// TestAnswerFirstScreen: the answer block per candidate puts the verdict,
// the ratio with its resolution and the simulator's truth, and a bound
// below the resolution said as such, before anything else.
func TestAnswerFirstScreen(t *testing.T) {
	t.Parallel()
	r := aaRun(t)
	r.Amdahl = &AmdahlSection{Loads: []AmdahlLoad{{Candidate: "small", OfferedLoadRPS: 4, Bound: 1.003}}}
	r.SimTruth = []TruthRatio{{Candidate: "big", OfferedLoadRPS: 4, Metric: "e2e", Stat: "mean", Value: 0.8}}
	if err := Analyze(&r, DecisionRule{Metric: "e2e", UseMean: true, RegressionMargin: 0.02}); err != nil {
		t.Fatal(err)
	}
	blocks := Answer(r)
	if len(blocks) != 2 {
		t.Fatalf("%d answer blocks, want 2", len(blocks))
	}
	text := map[string]string{}
	for _, b := range blocks {
		text[b.Candidate] = strings.Join(b.Lines, "\n")
		if !strings.HasPrefix(b.Lines[0], "verdict: ") {
			t.Errorf("%s's answer does not open with the verdict: %q", b.Candidate, b.Lines[0])
		}
	}
	for cand, want := range map[string][]string{
		"big":   {"verdict: PASS", "resolution ±", "simulator's truth 0.800"},
		"small": {"verdict: NO DIFFERENCE", "1.0030 at 4.00 req/s", "below the resolution ±", "smaller than what this run can detect"},
	} {
		for _, w := range want {
			if !strings.Contains(text[cand], w) {
				t.Errorf("%s's answer lacks %q:\n%s", cand, w, text[cand])
			}
		}
	}
	var md strings.Builder
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	if i, j := strings.Index(md.String(), "## Answer"), strings.Index(md.String(), "| field | value |"); i < 0 || i > j {
		t.Error("report.md does not open with the answer")
	}
}

// TestClientBoundRatioFeedsNoVerdict: a client-bound cell's ratio is
// computed and labelled, but the verdict is not decided on it.
func TestClientBoundRatioFeedsNoVerdict(t *testing.T) {
	t.Parallel()
	r := aaRun(t)
	r.Cells[1].ClientBound = true // big
	if err := Analyze(&r, DecisionRule{Metric: "e2e", UseMean: true, RegressionMargin: 0.02}); err != nil {
		t.Fatal(err)
	}
	for _, q := range r.Stats.Ratios {
		if q.Candidate == "big" && q.Metric == "e2e" && q.Stat == "mean" && (q.Excluded == "" || !q.Value.Interval) {
			t.Errorf("big's ratio %+v: want computed and marked excluded", q)
		}
	}
	if v := r.Verdicts[0]; v.Candidate != "big" || v.Outcome != "inconclusive" || !strings.Contains(v.Reason, "excluded from the verdict") {
		t.Errorf("verdict over a client-bound cell: %s", VerdictLine(v))
	}
}

// TestCompareUsesResolutionAndSaysProvenance: a canary comparison carries
// A's A/A replicate, so its ratios stand beside A's resolution and a
// difference within it is "no difference", not a failed gate; runs from
// different commits and machines say so.
func TestCompareUsesResolutionAndSaysProvenance(t *testing.T) {
	t.Parallel()
	a := aaRun(t)
	b := aaRun(t)
	a.Manifest.GitCommit, b.Manifest.GitCommit = "aaaa", "bbbb"
	a.Manifest.Machine, b.Manifest.Machine = "box1 (linux/amd64, 2 CPUs)", "box2 (linux/amd64, 8 CPUs)"
	// B's baseline is A's small candidate: 0.3 % apart, within the resolution.
	for i := range b.Cells {
		switch b.Cells[i].Arm {
		case "baseline":
			b.Cells[i].Arm = "old"
		case "small":
			b.Cells[i].Arm = "baseline"
		}
	}
	cmp, err := Compare(a, b, CompareOptions{Rule: DecisionRule{Metric: "e2e", UseMean: true}})
	if err != nil {
		t.Fatal(err)
	}
	v := cmp.Results.Verdicts[0]
	if v.Outcome != "no difference" || !strings.Contains(v.Reason, "resolution ±") {
		t.Errorf("canary within the resolution: %s", VerdictLine(v))
	}
	w := strings.Join(cmp.Results.Warnings, "\n")
	for _, want := range []string{"commits (A=aaaa, B=bbbb)", "machines (A=box1", "not the arms' alone"} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings %q lack %q", w, want)
		}
	}
}
