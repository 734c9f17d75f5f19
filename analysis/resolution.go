package analysis

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/transferlab/transferlab/report"
)

// resolutionMethod says how Resolution and the widened ratio intervals are computed.
const resolutionMethod = "each candidate/baseline interval (request by request, a block bootstrap inside the cells) " +
	"is widened by the run-to-run spread it cannot see: per load and metric statistic, the log ratio of each block " +
	"(repetition: the arms interleaved, each cell its own server state) against the baseline's cell of that block, " +
	"pooled over the A/A replicate (whose true ratio is 1: every block a degree of freedom) and the other arms (each " +
	"around its own mean), gives a standard deviation s with ν degrees of freedom; an arm with r blocks gets the " +
	"half-width t(ν) · s / √r (Student t at the interval's level), added to each side's log half-width in quadrature; " +
	"resolution = the farther end from 1 of the A/A replicate / baseline interval so widened"

// comparedResolutionMethod says how a comparison of two runs
// (AnalyzeAgainst) computes its resolution and widened intervals.
const comparedResolutionMethod = "the resolution is A's own, as A's report gives it: A's A/A replicate against A's baseline, " +
	"widened by the run-to-run spread pooled over A's own blocks (its arms interleaved in A's run), not over B's; " +
	"each B/A interval (request by request where both runs kept per-request figures: requests paired by ID, both runs replaying one schedule, " +
	"a block bootstrap inside the cells) is widened by the spread of the log ratio of B's cell against A's cell of the same repetition index, " +
	"pooled over B's blocks (around their mean) and A's A/A replicate (about 0), t(ν) · s / √r added in quadrature; " +
	"the two runs were not interleaved, so drift between them is in no interval"

// runToRun is the spread of one block's log ratio against the baseline at
// one load and metric statistic, pooled over the arms (DESIGN.md, "Arms,
// interleaving, statistics"): s² = (Σ_A/A L_k² + Σ_arms Σ_k (L_k − L̄)²) / ν
// with ν = R_A/A + Σ_arms (R − 1), L_k = ln(arm_k / baseline_k) of block k.
// The A/A replicate's blocks count about 0 (it is the baseline), the
// others' about their mean. It assumes every arm's block ratio spreads
// alike (the same server, the same noise).
type runToRun struct {
	s  float64
	df int
}

// runToRunOf pools the blocks of arms (each against base, paired by
// repetition) at one load; aa names the A/A replicate ("" when none).
// Blocks whose figure is refused or not positive are skipped, and so is a
// block in which the arm's or the baseline's cell is client-bound, unless
// withClientBound: the spread an excluded comparison (one made over every
// block, client-bound ones included: comparisonOf) is widened by, so that
// its interval carries the block-to-block spread of the blocks it is
// computed from.
func runToRunOf(arms []Group, base Group, aa, metric, statName string, withClientBound bool) runToRun {
	bv, br, _ := base.Values(metric, statName)
	byRep := map[int]float64{}
	for i, r := range br {
		byRep[r] = bv[i]
	}
	baseFlagged := clientBoundReps(base)
	var ss float64
	df := 0
	for _, g := range arms {
		vals, reps, _ := g.Values(metric, statName)
		flagged := clientBoundReps(g)
		var ls []float64
		for i, r := range reps {
			if !withClientBound && (baseFlagged[r] || flagged[r]) {
				continue
			}
			if b, ok := byRep[r]; ok && b > 0 && vals[i] > 0 {
				ls = append(ls, math.Log(vals[i]/b))
			}
		}
		if g.Arm == aa {
			for _, l := range ls {
				ss += l * l
			}
			df += len(ls)
			continue
		}
		if len(ls) < 2 {
			continue
		}
		m := stat.Mean(ls, nil)
		for _, l := range ls {
			ss += (l - m) * (l - m)
		}
		df += len(ls) - 1
	}
	if df == 0 {
		return runToRun{}
	}
	return runToRun{s: math.Sqrt(ss / float64(df)), df: df}
}

// spreadAt is the run-to-run spread at one load and metric statistic,
// pooled over the blocks of every arm of groups but the baseline, each
// against the baseline (runToRunOf): what Analyze widens every interval at
// that load by, and what the verdict asks a ratio's interval to carry
// (unresolvedNote). Zero (no degree of freedom) when the load has no
// baseline group. withClientBound pools client-bound blocks too
// (runToRunOf): for a comparison excluded from the verdict.
func spreadAt(groups []Group, baseline string, load float64, metric, statName string, withClientBound bool) runToRun {
	var others []Group
	var base Group
	found := false
	for _, g := range groups {
		switch {
		case g.Load != load:
		case g.Arm == baseline:
			base, found = g, true
		default:
			others = append(others, g)
		}
	}
	if !found {
		return runToRun{}
	}
	return runToRunOf(others, base, report.AAArm(baseline), metric, statName, withClientBound)
}

// halfWidth is the run-to-run half-width, in log space, of the mean log
// ratio of an arm with blocks blocks at the interval level: t(ν) · s / √blocks.
// 0 when nothing was pooled.
func (v runToRun) halfWidth(blocks int, level float64) float64 {
	if v.df == 0 || blocks < 1 {
		return 0
	}
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(v.df)}.Quantile((1 + level) / 2)
	return t * v.s / math.Sqrt(float64(blocks))
}

// resolutionOf builds the Resolution of aa (the A/A replicate's estimate,
// already widened by the run-to-run half-width h, in log space, with df
// degrees of freedom). The resolution is the farther end of aa's interval
// from 1, not its radius (half-width): measured against each other in
// results/verdicts-2026-12-02/README.md (DESIGN.md, "Arms, interleaving,
// statistics").
func resolutionOf(load float64, metric, stat string, aa report.Estimate, h float64, df int) report.Resolution {
	res := report.Resolution{OfferedLoadRPS: load, Metric: metric, Stat: stat, AA: aa}
	if aa.Interval {
		res.PlusMinus = ptr(max(math.Abs(aa.Low-1), math.Abs(aa.High-1)))
	}
	if df > 0 {
		res.RunToRun, res.RunToRunDF = ptr(math.Expm1(h)), df
	}
	return res
}

// widen adds the run-to-run half-width h (log space) to each side of e's
// interval in quadrature: a side at log distance d from the estimate moves
// to √(d² + h²). The interval inside the cells (a block bootstrap over
// requests) cannot see a shift shared by every request of a cell; h is that
// shift's spread from block to block.
func widen(e report.Estimate, h float64) report.Estimate {
	if !e.Interval || !(h > 0) || !(e.Value > 0) || !(e.Low > 0) {
		return e
	}
	lo, hi := math.Log(e.Value/e.Low), math.Log(e.High/e.Value)
	e.Low = e.Value * math.Exp(-math.Hypot(lo, h))
	e.High = e.Value * math.Exp(math.Hypot(hi, h))
	return e
}

// excludedNote says why a comparison at one load feeds no verdict: a
// client-bound cell among groups (the client, not the server, may have set
// the pace; each cell's figure is in its warning). "" when none is.
func excludedNote(groups ...Group) string {
	if f := flaggedCells(groups...); f != "" {
		return "client-bound: " + f
	}
	return ""
}

// flaggedCells names the client-bound cells of groups: "gate-up-2x rep 2,
// baseline rep 0"; "" when none is.
func flaggedCells(groups ...Group) string {
	var flagged []string
	for _, g := range groups {
		for _, c := range g.Cells {
			if c.ClientBound {
				flagged = append(flagged, fmt.Sprintf("%s rep %d", c.Arm, c.Repetition))
			}
		}
	}
	return strings.Join(flagged, ", ")
}

// clientBoundReps is the repetitions in which g's cell is client-bound.
func clientBoundReps(g Group) map[int]bool {
	out := map[int]bool{}
	for _, c := range g.Cells {
		if c.ClientBound {
			out[c.Repetition] = true
		}
	}
	return out
}

// blockComparison is what one comparison of num with den at one load is
// computed from: the groups, the number of num's blocks (repetitions), and
// either the client-bound cells whose blocks were left out (leftOut) or why
// the comparison feeds no verdict (excluded).
type blockComparison struct {
	num, den          Group
	blocks            int
	leftOut, excluded string
}

// comparisonOf leaves out of num and den every block (repetition) in which
// either one's cell is client-bound. When at least 2 of num's blocks remain,
// the comparison is of those (leftOut names the flagged cells: "gate-up-2x
// rep 2"); with fewer, it is of every block and excluded says why it feeds
// no verdict (excludedNote). With no flagged cell, num and den as given.
func comparisonOf(num, den Group) blockComparison {
	flagged := clientBoundReps(num)
	for r := range clientBoundReps(den) {
		flagged[r] = true
	}
	if len(flagged) == 0 {
		return blockComparison{num: num, den: den, blocks: len(num.Cells)}
	}
	keep := func(g Group) Group {
		g.Cells = slices.DeleteFunc(slices.Clone(g.Cells), func(c report.Cell) bool { return flagged[c.Repetition] })
		return g
	}
	n, d := keep(num), keep(den)
	if len(n.Cells) < 2 {
		return blockComparison{num: num, den: den, blocks: len(num.Cells), excluded: excludedNote(num, den)}
	}
	return blockComparison{num: n, den: d, blocks: len(n.Cells), leftOut: flaggedCells(num, den)}
}
