package analysis_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/transferlab/transferlab/analysis"
	"github.com/transferlab/transferlab/analysis/analysistest"
	"github.com/transferlab/transferlab/report"
	"github.com/transferlab/transferlab/stats"
)

// TestRequestRatioCoverage: on synthetic queue-like data with a known true
// ratio, the 95 % interval of the request-by-request block bootstrap
// contains the truth in ≥ 88 % of 300 seeded trials (binomial sd of the
// coverage ≈ 1.3 points) and is not vacuous (it misses in ≥ 1 %).
func TestRequestRatioCoverage(t *testing.T) {
	t.Parallel()
	const trials, n, truth = 300, 150, 0.9
	bs := analysis.NewBootstrapper(7, 400, 0.95)
	covered := 0
	rng := rand.New(rand.NewPCG(11, 12))
	for i := range trials {
		base := analysistest.QueueSeries(rng, n)
		num, den := make([]float64, n), make([]float64, n)
		for j, b := range base {
			// Both arms see the shared queue and their own noise; the
			// candidate's expected time is truth × the baseline's.
			den[j] = b * math.Exp(0.1*rng.NormFloat64()-0.005)
			num[j] = truth * b * math.Exp(0.1*rng.NormFloat64()-0.005)
		}
		e := bs.RequestRatio(analysis.Key("trial", i), "mean", analysis.NewPairs([][]float64{num}, [][]float64{den}))
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

// TestResolutionFromAA: the A/A replicate gives a resolution beside every
// ratio; a 20 % gain passes with an interval excluding 1, a 0.3 % one is
// "no difference" naming the resolution and, its Amdahl bound known, that
// the bound is below it; the replicate gets no verdict.
func TestResolutionFromAA(t *testing.T) {
	t.Parallel()
	r := analysistest.AARun(t)
	// small's most possible gain, 0.2 %, lies within any resolution this run has.
	r.Amdahl = &report.AmdahlSection{Loads: []report.AmdahlLoad{{Candidate: "small", OfferedLoadRPS: 4, Bound: 1.002}}}
	if err := analysis.Analyze(&r, report.DecisionRule{Metric: "e2e", UseMean: true, RegressionMargin: 0.02}); err != nil {
		t.Fatal(err)
	}
	if len(r.Verdicts) != 2 {
		t.Fatalf("%d verdicts, want 2 (big, small; none for the A/A replicate)", len(r.Verdicts))
	}
	var res *report.Resolution
	for i, q := range r.Stats.Resolution {
		if q.Metric == "e2e" && q.Stat == "mean" {
			res = &r.Stats.Resolution[i]
		}
	}
	// One block: the A/A replicate's offset is the only degree of freedom
	// of the run-to-run spread, so the half-width is t(1) = 12.7 times it.
	if res == nil || res.PlusMinus == nil || *res.PlusMinus <= 0 || *res.PlusMinus > 0.05 || res.RunToRunDF != 1 || res.RunToRun == nil {
		t.Fatalf("e2e mean resolution %+v, want a measured one below 5 %% from 1 degree of freedom", res)
	}
	if aa := math.Abs(math.Log(res.AA.Value)); *res.RunToRun < 12*aa {
		t.Errorf("run-to-run half-width %v from one A/A offset %v: want t(1) ≈ 12.7 times it", *res.RunToRun, aa)
	}
	for _, v := range r.Verdicts {
		line := analysis.VerdictLine(v)
		switch v.Candidate {
		case "big":
			if v.Outcome != "pass" || !strings.Contains(line, "resolution ±") {
				t.Errorf("20 %% gain: %s", line)
			}
		case "small":
			if v.Outcome != "no difference" || !strings.Contains(line, "NO DIFFERENCE: no change in mean E2E this run can detect") || !strings.Contains(line, "resolution ±") ||
				!strings.Contains(line, "below resolution: its Amdahl bound 1.0020 (at most 0.20 % faster in service time) is within this run's resolution ±") {
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
		if report.IsAAArm(g.Candidate) {
			t.Error("the A/A replicate got a capacity gain")
		}
	}
}

// TestClientBoundRatioFeedsNoVerdict: a client-bound cell's ratio is
// computed and labelled, but the verdict is not decided on it.
func TestClientBoundRatioFeedsNoVerdict(t *testing.T) {
	t.Parallel()
	r := analysistest.AARun(t)
	r.Cells[1].ClientBound = true // big
	if err := analysis.Analyze(&r, report.DecisionRule{Metric: "e2e", UseMean: true, RegressionMargin: 0.02}); err != nil {
		t.Fatal(err)
	}
	for _, q := range r.Stats.Ratios {
		if q.Candidate == "big" && q.Metric == "e2e" && q.Stat == "mean" && (q.Excluded == "" || !q.Value.Interval) {
			t.Errorf("big's ratio %+v: want computed and marked excluded", q)
		}
	}
	if v := r.Verdicts[0]; v.Candidate != "big" || v.Outcome != "inconclusive" || !strings.Contains(v.Reason, "excluded from the verdict") {
		t.Errorf("verdict over a client-bound cell: %s", analysis.VerdictLine(v))
	}
}

// TestBlocksCoverage: with a run-to-run factor per cell (log sd 3 %, the
// simulator's noise model), the widened 95 % interval of the mean ratio
// contains the noiseless ratio in 90–99.5 % of 200 seeded runs of 3 blocks,
// while the interval inside the cells alone (no run-to-run term) misses far
// more often: the widening is what makes it honest.
func TestBlocksCoverage(t *testing.T) {
	t.Parallel()
	const trials, truth = 200, 0.97
	rng := rand.New(rand.NewPCG(21, 22))
	covered, coveredInside, width := 0, 0, 0.0
	for i := range trials {
		r := analysistest.BlocksRun(rng, 3, 60, truth, 0.03)
		inside := r
		if err := analysis.Analyze(&r, report.DecisionRule{Metric: "e2e", UseMean: true, Seed: uint64(i), Resamples: 200}); err != nil {
			t.Fatal(err)
		}
		var e report.Estimate
		for _, q := range r.Stats.Ratios {
			if q.Metric == "e2e" && q.Stat == "mean" {
				e = q.Value
			}
		}
		if !e.Interval {
			t.Fatalf("trial %d: no interval: %s", i, e.Note)
		}
		if e.Low <= truth && truth <= e.High {
			covered++
		}
		width += (e.High - e.Low) / 2 / trials
		// The same cells with one block each: no pooled spread to widen by
		// beyond the A/A's own block; the first block alone shows what the
		// interval inside a cell covers.
		inside.Cells = inside.Cells[:3]
		inside.Cells[2].Arm = "other"
		inside.Manifest.ArmOrder = []string{"baseline", "cand", "other"}
		if err := analysis.Analyze(&inside, report.DecisionRule{Metric: "e2e", UseMean: true, Seed: uint64(i), Resamples: 200}); err != nil {
			t.Fatal(err)
		}
		for _, q := range inside.Stats.Ratios {
			if q.Candidate == "cand" && q.Metric == "e2e" && q.Stat == "mean" && q.Value.Low <= truth && truth <= q.Value.High {
				coveredInside++
			}
		}
	}
	share, shareInside := float64(covered)/trials, float64(coveredInside)/trials
	t.Logf("coverage %.3f (mean half-width %.4f); inside the cells only %.3f", share, width, shareInside)
	if share < 0.90 || share > 0.995 {
		t.Errorf("widened 95 %% intervals covered the noiseless ratio in %.1f %% of %d runs, want 90–99.5 %%", 100*share, trials)
	}
	if shareInside > 0.8 {
		t.Errorf("the interval inside one cell covered %.1f %%: the run-to-run noise should make it miss often", 100*shareInside)
	}
}

// TestClientBoundBlockLeftOut: with 3 blocks, a client-bound cell of the
// candidate leaves out its block only: the load still decides from the
// other 2 blocks (the spread pooled without it), and the verdict names the
// block left out, once. With 2 of 3 blocks flagged, fewer than 2 remain and
// the load decides nothing.
func TestClientBoundBlockLeftOut(t *testing.T) {
	t.Parallel()
	rule := report.DecisionRule{Metric: "e2e", UseMean: true, RegressionMargin: 0.02, Resamples: 400}
	flag := func(r *report.Results, arm string, rep int) {
		for i, c := range r.Cells {
			if c.Arm == arm && c.Repetition == rep {
				r.Cells[i].ClientBound = true
			}
		}
	}
	meanRatio := func(r report.Results) report.Ratio {
		for _, q := range r.Stats.Ratios {
			if q.Candidate == "cand" && q.Metric == "e2e" && q.Stat == "mean" {
				return q
			}
		}
		t.Fatal("no mean e2e ratio of cand")
		return report.Ratio{}
	}

	r := analysistest.BlocksRun(rand.New(rand.NewPCG(5, 6)), 3, 300, 0.8, 0.01)
	flag(&r, "cand", 1)
	if err := analysis.Analyze(&r, rule); err != nil {
		t.Fatal(err)
	}
	q := meanRatio(r)
	if q.Excluded != "" || !q.Value.Interval || q.Value.Reps != 2 {
		t.Errorf("ratio with one of 3 blocks client-bound: excluded %q, %d blocks, interval %v; want decided from 2 blocks", q.Excluded, q.Value.Reps, q.Value.Interval)
	}
	if !strings.Contains(q.LeftOut, "cand rep 1") {
		t.Errorf("ratio's blocks left out %q: want cand rep 1 named", q.LeftOut)
	}
	for _, res := range r.Stats.Resolution {
		// A/A pools 3 blocks, cand 2 left (one degree of freedom about its mean).
		if res.Metric == "e2e" && res.Stat == "mean" && res.RunToRunDF != 4 {
			t.Errorf("run-to-run df %d, want 4 (cand's client-bound block left out of the pooling)", res.RunToRunDF)
		}
	}
	v := r.Verdicts[0]
	if v.Outcome != report.VerdictPass {
		t.Errorf("verdict %s: want pass from the 2 remaining blocks", analysis.VerdictLine(v))
	}
	if n := strings.Count(v.Summary, "cand rep 1"); n != 1 {
		t.Errorf("summary names the block left out %d times, want once: %s", n, v.Summary)
	}

	r = analysistest.BlocksRun(rand.New(rand.NewPCG(5, 6)), 3, 300, 0.8, 0.01)
	flag(&r, "cand", 0)
	flag(&r, "baseline", 2)
	if err := analysis.Analyze(&r, rule); err != nil {
		t.Fatal(err)
	}
	if q := meanRatio(r); q.Excluded == "" {
		t.Errorf("ratio with 2 of 3 blocks client-bound not excluded: %+v", q)
	}
	if v := r.Verdicts[0]; v.Outcome != report.VerdictInconclusive || !strings.Contains(v.Summary, "at every load (1) the blocks left once those with a client-bound cell are left out are fewer than 2") {
		t.Errorf("verdict with 2 of 3 blocks client-bound: %s", analysis.VerdictLine(v))
	}
}

// TestAmdahlSpeedupIsVerdictRatio: the Amdahl table's measured speedups are
// the reciprocals of the verdict's candidate/baseline ratios (the same
// blocks, the same widened interval, inverted), and a client-bound block is
// left out of both; with fewer than 2 blocks left the speedup is refused
// like the ratio.
func TestAmdahlSpeedupIsVerdictRatio(t *testing.T) {
	t.Parallel()
	rule := report.DecisionRule{Metric: "e2e", UseMean: true, RegressionMargin: 0.02, Resamples: 400}
	run := func(flagged ...[2]any) report.Results {
		r := analysistest.BlocksRun(rand.New(rand.NewPCG(7, 8)), 3, 300, 0.8, 0.01)
		for i, c := range r.Cells {
			for _, f := range flagged {
				if c.Arm != f[0].(string) || c.Repetition != f[1].(int) {
					continue
				}
				// A client-bound cell whose figures are far off: halved.
				vals := make([]float64, len(c.Requests))
				for k, q := range c.Requests {
					vals[k] = *q.E2EMs / 2
					r.Cells[i].Requests[k].E2EMs = analysistest.Ptr(vals[k])
				}
				r.Cells[i].E2E = analysis.BuildDist(vals, stats.DefaultConfidence, 0)
				r.Cells[i].ClientBound = true
			}
		}
		r.Amdahl = &report.AmdahlSection{Loads: []report.AmdahlLoad{{Candidate: "cand", OfferedLoadRPS: 4, FWall: 0.5, S: 2, Bound: 1 / 0.75}}}
		if err := analysis.Analyze(&r, rule); err != nil {
			t.Fatal(err)
		}
		return r
	}
	pairs := func(r report.Results) map[string][2]report.Estimate {
		out := map[string][2]report.Estimate{}
		for _, m := range r.Amdahl.Loads[0].Measured {
			for _, q := range r.Stats.Ratios {
				if q.Candidate == "cand" && q.Metric == m.Metric && q.Stat == m.Stat && q.Metric == "e2e" {
					out[m.Stat] = [2]report.Estimate{q.Value, m.Value}
				}
			}
		}
		if len(out) != 2 {
			t.Fatalf("e2e mean and p99 speedups matched to ratios: %d of 2 (%+v)", len(out), r.Amdahl.Loads[0].Measured)
		}
		return out
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Abs(b) }
	r := run([2]any{"cand", 1})
	for stat, p := range pairs(r) {
		q, s := p[0], p[1]
		if !q.Interval || !s.Interval || !near(s.Value, 1/q.Value) || !near(s.Low, 1/q.High) || !near(s.High, 1/q.Low) {
			t.Errorf("e2e %s: speedup %v [%v, %v] is not the reciprocal of the ratio %v [%v, %v]", stat, s.Value, s.Low, s.High, q.Value, q.Low, q.High)
		}
		if s.Reps != 2 || q.Reps != 2 || !strings.Contains(s.Note, "cand rep 1") {
			t.Errorf("e2e %s: speedup over %d blocks, ratio over %d (note %q); want 2 each, the client-bound block named", stat, s.Reps, q.Reps, s.Note)
		}
		if s.Value > 1.3 || s.Value < 1.2 {
			t.Errorf("e2e %s: speedup %v, want about 1.25 (the halved client-bound block left out)", stat, s.Value)
		}
	}
	r = run([2]any{"cand", 0}, [2]any{"baseline", 2})
	for stat, p := range pairs(r) {
		if s := p[1]; s.Reps != 0 || !strings.Contains(s.Note, "client-bound") {
			t.Errorf("e2e %s with 2 of 3 blocks client-bound: speedup %+v, want refused with the reason", stat, s)
		}
	}
}

// TestExcludedRatioCarriesRunToRun: with every block client-bound the
// comparisons are over every block and feed no verdict, but their
// intervals (the candidate's ratio and the A/A replicate's resolution)
// still carry the run-to-run spread of those blocks: the same intervals as
// the same cells unflagged, not the narrower spread inside the cells.
func TestExcludedRatioCarriesRunToRun(t *testing.T) {
	t.Parallel()
	rule := report.DecisionRule{Metric: "e2e", UseMean: true, RegressionMargin: 0.02, Resamples: 400}
	run := func(flagAll bool) report.Results {
		r := analysistest.BlocksRun(rand.New(rand.NewPCG(9, 10)), 3, 200, 0.97, 0.03)
		for i := range r.Cells {
			r.Cells[i].ClientBound = flagAll
		}
		if err := analysis.Analyze(&r, rule); err != nil {
			t.Fatal(err)
		}
		return r
	}
	plain, flagged := run(false), run(true)
	find := func(r report.Results) (report.Ratio, report.Resolution) {
		var q report.Ratio
		var res report.Resolution
		for _, x := range r.Stats.Ratios {
			if x.Candidate == "cand" && x.Metric == "e2e" && x.Stat == "mean" {
				q = x
			}
		}
		for _, x := range r.Stats.Resolution {
			if x.Metric == "e2e" && x.Stat == "mean" {
				res = x
			}
		}
		return q, res
	}
	pq, pres := find(plain)
	fq, fres := find(flagged)
	if fq.Excluded == "" || fres.Excluded == "" {
		t.Fatalf("every block client-bound: ratio excluded %q, resolution excluded %q; want both excluded", fq.Excluded, fres.Excluded)
	}
	if fres.RunToRunDF != pres.RunToRunDF || fres.RunToRunDF == 0 {
		t.Errorf("excluded resolution's run-to-run df %d, want %d (every block pooled)", fres.RunToRunDF, pres.RunToRunDF)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Abs(b) }
	if !fq.Value.Interval || !near(fq.Value.Low, pq.Value.Low) || !near(fq.Value.High, pq.Value.High) {
		t.Errorf("excluded ratio %v [%v, %v], want the unflagged run's widened interval [%v, %v]", fq.Value.Value, fq.Value.Low, fq.Value.High, pq.Value.Low, pq.Value.High)
	}
	if fres.PlusMinus == nil || pres.PlusMinus == nil || !near(*fres.PlusMinus, *pres.PlusMinus) {
		t.Errorf("excluded resolution %v, want the unflagged run's %v", fres.PlusMinus, pres.PlusMinus)
	}
}

// TestZeroDFAfterClientBoundDecidesNothing: when leaving out client-bound
// blocks leaves a comparison's blocks no run-to-run degree of freedom (the
// only A/A block client-bound: repetitions 1, or a run stopped after its
// first block), the ratio's interval is widened by the spread over every
// block, client-bound ones included (the same interval as the same cells
// unflagged, not the narrower one inside the cells), and the verdict is
// inconclusive saying why, whatever the interval says (ν = 0 decides
// nothing). Before, the interval carried no run-to-run spread and a 20 %
// gain passed on it.
func TestZeroDFAfterClientBoundDecidesNothing(t *testing.T) {
	t.Parallel()
	rule := report.DecisionRule{Metric: "e2e", UseMean: true, RegressionMargin: 0.02, Resamples: 400}
	aa := report.AAArm("baseline")
	ratioOf := func(r report.Results, cand string) report.Ratio {
		for _, q := range r.Stats.Ratios {
			if q.Candidate == cand && q.Metric == "e2e" && q.Stat == "mean" {
				return q
			}
		}
		t.Fatalf("no mean e2e ratio of %s", cand)
		return report.Ratio{}
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Abs(b) }
	for _, tc := range []struct {
		name string
		run  func() report.Results
		cand string
		want []string
	}{
		{"repetitions 1", func() report.Results { return analysistest.AARun(t) }, "big",
			[]string{"decides nothing: the blocks with a client-bound cell (" + aa + " rep 0) are left out, so the blocks that count give no run-to-run spread (ν = 0)",
				"widened by the spread over every block, client-bound ones included", "rerun with more repetitions or on a less loaded client machine"}},
		{"stopped after block 1", func() report.Results {
			r := analysistest.BlocksRun(rand.New(rand.NewPCG(9, 10)), 1, 300, 0.8, 0.01)
			var err error
			if r.RunOrder, err = report.RunOrder([]string{"baseline", "cand", aa}, []float64{4}, 3); err != nil {
				t.Fatal(err)
			}
			r.Complete, r.IncompleteReason = false, "interrupted by SIGINT"
			return r
		}, "cand",
			[]string{"decides nothing: the run stopped early (interrupted by SIGINT) before blocks (repetitions) 2–3 of 3 at this load ran, and the blocks with a client-bound cell (" + aa + " rep 0) are left out",
				"(ν = 0)", "`run --resume DIR` runs the missing cells"}},
	} {
		plain, flagged := tc.run(), tc.run()
		for i, c := range flagged.Cells {
			flagged.Cells[i].ClientBound = c.Arm == aa
		}
		for _, r := range []*report.Results{&plain, &flagged} {
			if err := analysis.Analyze(r, rule); err != nil {
				t.Fatal(err)
			}
		}
		pq, fq := ratioOf(plain, tc.cand), ratioOf(flagged, tc.cand)
		if fq.Excluded != "" || !fq.Value.Interval {
			t.Fatalf("%s: ratio %+v: want an interval, not excluded (its own cells are not client-bound)", tc.name, fq)
		}
		if !near(fq.Value.Low, pq.Value.Low) || !near(fq.Value.High, pq.Value.High) {
			t.Errorf("%s: ratio %v [%v, %v] with the A/A block client-bound, want the unflagged run's widened interval [%v, %v]",
				tc.name, fq.Value.Value, fq.Value.Low, fq.Value.High, pq.Value.Low, pq.Value.High)
		}
		if pv := plain.Verdicts[0]; pv.Outcome == report.VerdictInconclusive {
			t.Errorf("%s: unflagged verdict %s: the same cells unflagged decide", tc.name, analysis.VerdictLine(pv))
		}
		v := flagged.Verdicts[0]
		if v.Candidate != tc.cand || v.Outcome != report.VerdictInconclusive {
			t.Errorf("%s: verdict %s: want inconclusive (ν = 0 over the blocks that count)", tc.name, analysis.VerdictLine(v))
		}
		for _, w := range tc.want {
			if !strings.Contains(v.Summary, w) || !strings.Contains(v.Clauses[1].Detail, w) {
				t.Errorf("%s: verdict %s\nclause b: %s\nwant %q in both", tc.name, analysis.VerdictLine(v), v.Clauses[1].Detail, w)
			}
		}
	}
}
