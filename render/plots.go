package render

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
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
// fonts referenced by name, nothing fetched).
func (c chart) svg() (template.HTML, error) {
	p := plot.New()
	p.Title.Text = c.title
	p.X.Label.Text = c.xLabel
	p.Y.Label.Text = c.yLabel
	// The legend is drawn beside the plot, in a strip of its own, so it can
	// cover no line (inside the data area it did, wherever a series ran
	// through its corner).
	leg := plot.NewLegend()
	leg.Top, leg.Left = !c.legendBottomRight, true
	p.Add(plotter.NewGrid())
	for _, s := range c.series {
		if len(s.points) == 0 {
			continue
		}
		xys := make(plotter.XYs, len(s.points))
		var errs plotter.YErrors
		var errXYs plotter.XYs
		for i, pt := range s.points {
			xys[i] = plotter.XY{X: pt.x, Y: pt.y}
			if pt.interval {
				errXYs = append(errXYs, xys[i])
				errs = append(errs, struct{ Low, High float64 }{pt.y - pt.lo, pt.hi - pt.y})
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
			leg.Add(s.name, line)
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
	cv := vgsvg.New(chartWidth, chartHeight)
	dc := draw.New(cv)
	if r := leg.Rectangle(dc); r.Max.X > r.Min.X {
		w := r.Max.X - r.Min.X + vg.Points(8)
		p.Draw(draw.Crop(dc, 0, -w, 0, 0))
		// Level with the plot's data area: below the title, above the x axis.
		lc := draw.Crop(dc, dc.Max.X-dc.Min.X-w+vg.Points(6), 0, vg.Points(40), -vg.Points(24))
		leg.Draw(lc)
	} else {
		p.Draw(dc)
	}
	var b bytes.Buffer
	if _, err := cv.WriteTo(&b); err != nil {
		return "", fmt.Errorf("render: chart %s: %w", c.id, err)
	}
	s := b.String()
	if i := strings.Index(s, "<svg"); i >= 0 {
		s = s[i:] // drop the XML declaration and generator comment: the SVG is inlined
	}
	s = strings.Replace(s, "<svg ", `<svg class="chart" role="img" aria-label="`+template.HTMLEscapeString(c.title)+`" `, 1)
	return template.HTML(s), nil // #nosec: produced by gonum/plot from numbers and escaped labels
}

// errBars adapts points with intervals to plotter.NewYErrorBars.
type errBars struct {
	plotter.XYs
	plotter.YErrors
}
