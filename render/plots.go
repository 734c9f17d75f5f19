package render

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// palette holds saturated series colours (one per arm, in arm order); text and
// axes stay black/grey, so a browser test can tell a drawn series from text.
var palette = [...]color.RGBA{
	{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255},
	{148, 103, 189, 255}, {227, 119, 194, 255}, {23, 190, 207, 255}, {188, 189, 34, 255},
}

// point is one plotted value with an optional interval [lo, hi].
type point struct {
	x, y, lo, hi float64
	interval     bool
}

// series is one line of a chart.
type series struct {
	name   string
	color  int
	dashed bool
	thin   bool
	points []point
}

// chart is one figure: a title, axis labels (with units) and its series.
type chart struct {
	id, title, xLabel, yLabel string
	series                    []series
	// legendBottomRight moves the legend from the top left (rising curves) to the bottom right (CDFs).
	legendBottomRight bool
}

// chartWidth and chartHeight are each chart's size (points in the SVG; 1 pt = 4/3 CSS px).
const (
	chartWidth  = 5.2 * vg.Inch
	chartHeight = 3 * vg.Inch
)

// svg renders c with gonum/plot as an inline <svg> element (no XML prelude,
// fonts referenced by name, nothing fetched). The axes span every point and
// interval with padding (axisRange), tick labels carry the digits their step
// needs (readableTicks), the title and y label wrap to the room they have, and
// each legend entry shows what its series draws (a line only between ≥ 2
// points, a glyph where points are marked). The <svg> carries data-frame (the
// data area) and data-legend (the legend's box), in its viewBox units, for the
// browser test.
func (c chart) svg() (template.HTML, error) {
	p := plot.New()
	p.X.Label.Text = c.xLabel
	p.X.Tick.Marker, p.Y.Tick.Marker = readableTicks{}, readableTicks{}
	// The legend is drawn beside the plot, in a strip of its own, so it can
	// cover no line (inside the data area it did, wherever a series ran
	// through its corner).
	leg := plot.NewLegend()
	leg.Top, leg.Left = !c.legendBottomRight, true
	p.Add(plotter.NewGrid())
	var xs, ys []float64
	for _, s := range c.series {
		if len(s.points) == 0 {
			continue
		}
		xys := make(plotter.XYs, len(s.points))
		var errs plotter.YErrors
		var errXYs plotter.XYs
		for i, pt := range s.points {
			xys[i] = plotter.XY{X: pt.x, Y: pt.y}
			xs, ys = append(xs, pt.x), append(ys, pt.y)
			if pt.interval {
				errXYs = append(errXYs, xys[i])
				errs = append(errs, struct{ Low, High float64 }{pt.y - pt.lo, pt.hi - pt.y})
				ys = append(ys, pt.lo, pt.hi)
			}
		}
		line, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			return "", fmt.Errorf("render: chart %s series %s: %w", c.id, s.name, err)
		}
		col := palette[s.color%len(palette)]
		line.Color, pts.Color = col, col
		line.Width = vg.Points(2)
		if s.thin {
			line.Width = vg.Points(1)
			pts.Radius = 0
		}
		if s.dashed {
			line.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		}
		p.Add(line, pts)
		if s.name != "" {
			leg.Add(s.name, legendThumbs(s, line, pts)...)
		}
		if len(errXYs) > 0 {
			eb, err := plotter.NewYErrorBars(errBars{errXYs, errs})
			if err != nil {
				return "", fmt.Errorf("render: chart %s series %s error bars: %w", c.id, s.name, err)
			}
			eb.Color = col
			eb.Width = vg.Points(1.5)
			p.Add(eb)
		}
	}
	p.X.Min, p.X.Max = axisRange(xs)
	p.Y.Min, p.Y.Max = axisRange(ys)
	cv := vgsvg.New(chartWidth, chartHeight)
	dc := draw.New(cv)
	pc, lc := dc, draw.Canvas{}
	var legBox vg.Rectangle
	if r := leg.Rectangle(dc); r.Max.X > r.Min.X {
		w := r.Max.X - r.Min.X + vg.Points(8)
		pc = draw.Crop(dc, 0, -w, 0, 0)
		// Level with the plot's data area: below the title, above the x axis.
		lc = draw.Crop(dc, dc.Max.X-dc.Min.X-w+vg.Points(6), 0, vg.Points(40), -vg.Points(24))
		legBox = leg.Rectangle(lc)
	}
	// The title is centred over the plot (not the legend): it wraps to that width.
	p.Title.Text = wrapText(p.Title.TextStyle, c.title, pc.Max.X-pc.Min.X-vg.Points(4))
	// The y label wraps to the data area's height: gonum shrinks the data area
	// from the top until a longer label fits, and then the label runs past the
	// chart's bottom (rmsnorm's Amdahl chart lost a third of its height).
	da := p.DataCanvas(pc)
	p.Y.Label.Text = wrapText(p.Y.Label.TextStyle, c.yLabel, da.Max.Y-da.Min.Y-vg.Points(4))
	p.Draw(pc)
	frame := p.DataCanvas(pc).Rectangle
	if legBox.Max.X > legBox.Min.X {
		leg.Draw(lc)
	}
	var b bytes.Buffer
	if _, err := cv.WriteTo(&b); err != nil {
		return "", fmt.Errorf("render: chart %s: %w", c.id, err)
	}
	s := b.String()
	if i := strings.Index(s, "<svg"); i >= 0 {
		s = s[i:] // drop the XML declaration and generator comment: the SVG is inlined
	}
	s = strings.Replace(s, "<svg ", `<svg class="chart" role="img" aria-label="`+template.HTMLEscapeString(c.title)+`" data-frame="`+boxAttr(frame)+`" data-legend="`+boxAttr(legBox)+`" `, 1)
	return template.HTML(s), nil // #nosec: produced by gonum/plot from numbers and escaped labels
}

// boxAttr writes r (canvas points, origin bottom left) as "left top right
// bottom" in the SVG's viewBox units (origin top left).
func boxAttr(r vg.Rectangle) string {
	f := func(v vg.Length) string { return strconv.FormatFloat(float64(v), 'f', 2, 64) }
	return f(r.Min.X) + " " + f(chartHeight-r.Max.Y) + " " + f(r.Max.X) + " " + f(chartHeight-r.Min.Y)
}

// legendThumbs are what a series' legend entry shows: its line where it draws
// one (≥ 2 points) and its glyph where it marks its points, so that a series
// drawn as a lone point is not shown as a (dashed) line.
func legendThumbs(s series, line *plotter.Line, pts *plotter.Scatter) []plot.Thumbnailer {
	var th []plot.Thumbnailer
	if len(s.points) >= 2 {
		th = append(th, line)
	}
	if pts.Radius > 0 {
		th = append(th, pts)
	}
	return th
}

// axisPad is the share of an axis's data span added on each side, so that no
// point's glyph or error bar's cap sits on (or past) the data area's edge.
const axisPad = 0.08

// axisRange is the axis range for vals: their span widened by axisPad on each
// side; a single value (no span) gets ±10 % of itself, ±1 at 0.
func axisRange(vals []float64) (lo, hi float64) {
	if len(vals) == 0 {
		return 0, 1
	}
	lo, hi = slices.Min(vals), slices.Max(vals)
	pad := (hi - lo) * axisPad
	if pad == 0 {
		pad = math.Abs(lo) / 10
		if pad == 0 {
			pad = 1
		}
	}
	return lo - pad, hi + pad
}

// readableTicks places ticks as gonum's DefaultTicks does and labels each
// major tick with the fewest digits that write its value exactly, one format
// for all, so adjacent labels always differ (DefaultTicks' own labels read
// 1.1, 1.1, 1.1 over a range 1.05-1.16).
type readableTicks struct{}

// Ticks implements plot.Ticker.
func (readableTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	var major []float64
	for _, t := range ticks {
		if !t.IsMinor() {
			major = append(major, t.Value)
		}
	}
	labels := tickLabels(major)
	for i, j := 0, 0; i < len(ticks); i++ {
		if !ticks[i].IsMinor() {
			ticks[i].Label = labels[j]
			j++
		}
	}
	return ticks
}

// tickLabels writes vals (ascending tick values) in the shortest of the 'f'
// (0-12 decimals) and 'g' (1-15 significant digits) formats that writes every
// one of them to within a millionth of their step; a value within that of 0
// is written 0.
func tickLabels(vals []float64) []string {
	if len(vals) == 0 {
		return nil
	}
	step := math.Abs(vals[len(vals)-1] - vals[0])
	if len(vals) > 1 {
		step /= float64(len(vals) - 1)
	}
	if step == 0 {
		step = math.Max(math.Abs(vals[0]), 1)
	}
	tol := step * 1e-6
	clean := make([]float64, len(vals))
	for i, v := range vals {
		if math.Abs(v) < tol {
			v = 0
		}
		clean[i] = v
	}
	try := func(fmtc byte, prec int) ([]string, int) {
		out, width := make([]string, len(clean)), 0
		for i, v := range clean {
			out[i] = strconv.FormatFloat(v, fmtc, prec, 64)
			back, err := strconv.ParseFloat(out[i], 64)
			if err != nil || math.Abs(back-v) > tol {
				return nil, 0
			}
			width = max(width, len(out[i]))
		}
		return out, width
	}
	var best []string
	bestWidth := math.MaxInt
	for d := 0; d <= 12; d++ {
		if out, w := try('f', d); out != nil {
			best, bestWidth = out, w
			break
		}
	}
	for pr := 1; pr <= 15; pr++ {
		if out, w := try('g', pr); out != nil {
			if w < bestWidth {
				best, bestWidth = out, w
			}
			break
		}
	}
	if best == nil {
		best, _ = try('g', -1)
	}
	return best
}

// wrapText breaks s at spaces into lines no wider than width in sty (a word
// wider than width keeps a line of its own).
func wrapText(sty text.Style, s string, width vg.Length) string {
	var lines []string
	for _, w := range strings.Fields(s) {
		if n := len(lines); n > 0 && sty.Width(lines[n-1]+" "+w) <= width {
			lines[n-1] += " " + w
			continue
		}
		lines = append(lines, w)
	}
	return strings.Join(lines, "\n")
}

// errBars adapts points with intervals to plotter.NewYErrorBars.
type errBars struct {
	plotter.XYs
	plotter.YErrors
}
