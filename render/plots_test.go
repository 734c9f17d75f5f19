package render

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
)

// TestAxisRangePadsEveryValue: the range holds every value with axisPad of
// the span to spare on each side, and a lone value gets room around it.
func TestAxisRangePadsEveryValue(t *testing.T) {
	for _, vals := range [][]float64{
		{1.0587, 1.1137, 1.1408, 1.1515},            // the quickstart's cost per 1M tokens (gate-up's low point sat on the x axis)
		{0.4775, 0.5382, 0.5449, 0.5547},            // its energy per token (the high points sat on the frame's top)
		{0.906, 1.064, 0.9434, 1.025, 1.016, 0.984}, // rmsnorm's speedups and their intervals
		{10},
		{0},
		{-3, -3},
	} {
		lo, hi := axisRange(vals)
		vmin, vmax := vals[0], vals[0]
		for _, v := range vals {
			vmin, vmax = math.Min(vmin, v), math.Max(vmax, v)
		}
		room := (vmax - vmin) * axisPad * 0.999
		if vmax == vmin {
			room = 0.05 * math.Max(math.Abs(vmin), 1)
		}
		if vmin-lo < room || hi-vmax < room {
			t.Errorf("axisRange(%v) = [%g, %g]: want ≥ %g beyond [%g, %g] on each side", vals, lo, hi, room, vmin, vmax)
		}
	}
}

// TestTickLabelsDistinct: over narrow and wide ranges at every magnitude the
// major tick labels differ pairwise and each reads its tick's value; gonum's
// own labels read "1.1" three times on the quickstart's cost range.
func TestTickLabelsDistinct(t *testing.T) {
	type rng struct{ lo, hi float64 }
	ranges := []rng{{1.0513, 1.1589}, {0.8933, 1.0768}, {0.4713, 0.5609}, {0, 1}, {-0.05, 1.05}, {37.1, 58.2}}
	for mag := -6; mag <= 9; mag++ {
		s := math.Pow(10, float64(mag))
		for _, r := range []rng{{1.0513, 1.1589}, {0.999, 1.001}, {-2.5, 7.3}, {12.34, 12.3401}} {
			ranges = append(ranges, rng{r.lo * s, r.hi * s})
		}
	}
	for _, r := range ranges {
		ticks := readableTicks{}.Ticks(r.lo, r.hi)
		var major []plot.Tick
		for _, tk := range ticks {
			if !tk.IsMinor() {
				major = append(major, tk)
			}
		}
		if len(major) < 2 {
			t.Errorf("[%g, %g]: %d labelled ticks, want ≥ 2", r.lo, r.hi, len(major))
			continue
		}
		step := major[1].Value - major[0].Value
		seen := map[string]bool{}
		for _, tk := range major {
			if seen[tk.Label] {
				t.Errorf("[%g, %g]: label %q twice in %v", r.lo, r.hi, tk.Label, major)
			}
			seen[tk.Label] = true
			if v, err := parseTick(tk.Label); err != nil || math.Abs(v-tk.Value) > math.Abs(step)*1e-6 {
				t.Errorf("[%g, %g]: label %q for tick %g", r.lo, r.hi, tk.Label, tk.Value)
			}
		}
	}
	// One format for all: 0.92 … 1.00 … 1.04, not 0.92 … 1 … 1.04.
	if got := strings.Join(tickLabels([]float64{0.92, 0.96, 1, 1.04}), " "); got != "0.92 0.96 1.00 1.04" {
		t.Errorf("tickLabels = %s, want 0.92 0.96 1.00 1.04", got)
	}
	// gonum's own labels on the quickstart's cost range, for the record of why readableTicks exists.
	def := plot.DefaultTicks{}.Ticks(1.0513, 1.1589)
	var defLabels []string
	for _, tk := range def {
		if !tk.IsMinor() {
			defLabels = append(defLabels, tk.Label)
		}
	}
	t.Logf("gonum DefaultTicks on [1.0513, 1.1589]: %q", defLabels)
}

func parseTick(s string) (float64, error) {
	var v float64
	_, err := fmt.Sscan(s, &v)
	return v, err
}

// TestChartLegendAndFrame: a series of one point is shown in the legend by
// its glyph only (a line is drawn only between ≥ 2 points), a dashed series
// of ≥ 2 points by its line and glyph; the <svg> carries its data area and
// legend box; a title too wide for the plot wraps.
func TestChartLegendAndFrame(t *testing.T) {
	one := series{name: "Amdahl bound", dashed: true, points: []point{{x: 10, y: 1.0159, lo: 1.0158, hi: 1.0160, interval: true}}}
	two := series{name: "Amdahl bound", dashed: true, points: []point{{x: 10, y: 1.1}, {x: 20, y: 1.2}}}
	thin := series{name: "cdf", thin: true, points: []point{{x: 1, y: 0}, {x: 2, y: 1}}}
	for _, c := range []struct {
		s    series
		want int
	}{{one, 1}, {two, 2}, {thin, 1}} {
		line, pts, err := plotter.NewLinePoints(plotter.XYs{{X: 0, Y: 0}})
		if err != nil {
			t.Fatal(err)
		}
		if c.s.thin {
			pts.Radius = 0
		}
		th := legendThumbs(c.s, line, pts)
		if len(th) != c.want {
			t.Errorf("series of %d points (thin %v): %d legend thumbnails, want %d", len(c.s.points), c.s.thin, len(th), c.want)
		}
		if len(c.s.points) == 1 && len(th) == 1 && th[0] != plot.Thumbnailer(pts) {
			t.Errorf("a lone point's legend shows %T, want its glyph", th[0])
		}
	}
	ch := chart{id: "t", title: "rmsnorm-2.5x: measured speedup vs Amdahl bound, at every offered load of the run", xLabel: "offered load (req/s)", yLabel: "speedup",
		series: []series{one, {name: "measured e2e mean", color: 1, points: []point{{x: 10, y: 0.984, lo: 0.94, hi: 1.03, interval: true}}}}}
	svg, err := ch.svg()
	if err != nil {
		t.Fatal(err)
	}
	s := string(svg)
	for _, attr := range []string{"data-frame", "data-legend"} {
		if !regexp.MustCompile(attr + `="[\d.]+ [\d.]+ [\d.]+ [\d.]+"`).MatchString(s) {
			t.Errorf("the chart's <svg> has no %s box", attr)
		}
	}
	if strings.Contains(s, ">rmsnorm-2.5x: measured speedup vs Amdahl bound, at every offered load of the run<") {
		t.Error("a title wider than the plot was not wrapped")
	}
	if strings.Contains(s, "stroke-dasharray") {
		t.Error("a lone bound point drew a dashed line (or its legend shows one)")
	}
}
