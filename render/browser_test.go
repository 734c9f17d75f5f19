package render

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	htmlstd "html"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/transferlab/transferlab/analysis/analysistest"
	"github.com/transferlab/transferlab/report"
)

// The browser test renders report.html in a real headless Chromium and checks,
// chart by chart, that the pixels inside each chart's box were drawn. CI sets
// TRANSFERLAB_BROWSER_TEST=1 after installing Debian's chromium.
const browserEnv = "TRANSFERLAB_BROWSER_TEST"

// chartBox is a chart's place on the page, in CSS px (= screenshot px at scale 1).
type chartBox struct {
	id         string
	x, y, w, h int
}

// boxScript is appended to the page under test only (report.html has no
// script): it writes each figure's box and the page height into the DOM so
// --dump-dom can read them back.
const boxScript = `<script>
document.body.setAttribute("data-boxes", Array.from(document.querySelectorAll("figure")).map(function (f) {
  var r = f.querySelector("svg").getBoundingClientRect();
  return [f.id, Math.round(r.left + scrollX), Math.round(r.top + scrollY), Math.round(r.width), Math.round(r.height)].join(",");
}).join(";"));
document.body.setAttribute("data-height", String(document.documentElement.scrollHeight));
</script>`

func chromium(t *testing.T) string {
	t.Helper()
	if os.Getenv(browserEnv) != "1" {
		t.Skipf("browser test skipped: set %s=1 with Debian's chromium installed (apt-get install -y chromium)", browserEnv)
	}
	for _, p := range []string{"/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Fatalf("%s=1 but no chromium at /usr/bin/chromium: install it (apt-get install -y chromium)", browserEnv)
	return ""
}

// runChromium runs headless Chromium on page with extra flags and returns
// stdout. A Chromium that has not finished within 180 s (it can hang at
// start-up on a loaded machine, the page unread) is killed and run once
// more with a fresh profile; any other failure, or a second hang, fails.
func runChromium(t *testing.T, bin, page string, extra ...string) []byte {
	t.Helper()
	for attempt := 1; ; attempt++ {
		out, errb, err, hung := chromiumOnce(bin, page, t.TempDir(), extra)
		if err == nil {
			return out
		}
		if !hung || attempt == 2 {
			t.Fatalf("chromium %v: %v\nstderr: %s", extra, err, errb)
		}
		t.Logf("chromium %v did not finish in 180 s (%v): running it once more", extra, err)
	}
}

// chromiumOnce runs Chromium once with profile dir dir; hung reports that
// it was killed at its 180 s deadline.
func chromiumOnce(bin, page, dir string, extra []string) (out []byte, stderr string, err error, hung bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
		"--force-device-scale-factor=1", "--user-data-dir=" + dir}, extra...)
	args = append(args, "file://"+page)
	cmd := exec.CommandContext(ctx, bin, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.Bytes(), e.String(), err, err != nil && ctx.Err() != nil
}

var (
	boxesRe  = regexp.MustCompile(`data-boxes="([^"]*)"`)
	heightRe = regexp.MustCompile(`data-height="(\d+)"`)
)

// layoutCharts loads html (with boxScript) in Chromium and returns each
// chart's box and the page height, in CSS px.
func layoutCharts(t *testing.T, bin string, html []byte) ([]chartBox, int) {
	t.Helper()
	page := writePage(t, bytes.Replace(html, []byte("</body>"), []byte(boxScript+"</body>"), 1))
	dom := runChromium(t, bin, page, "--dump-dom", fmt.Sprintf("--window-size=%d,1000", pageWidth))
	bm, hm := boxesRe.FindSubmatch(dom), heightRe.FindSubmatch(dom)
	if bm == nil || hm == nil {
		t.Fatalf("--dump-dom has no chart boxes: did the page load? (%d bytes of DOM)", len(dom))
	}
	var boxes []chartBox
	for _, s := range strings.Split(string(bm[1]), ";") {
		f := strings.Split(s, ",")
		if len(f) != 5 {
			t.Fatalf("bad box %q", s)
		}
		b := chartBox{id: f[0]}
		for i, p := range []*int{&b.x, &b.y, &b.w, &b.h} {
			v, err := strconv.Atoi(f[i+1])
			if err != nil {
				t.Fatalf("bad box %q: %v", s, err)
			}
			*p = v
		}
		boxes = append(boxes, b)
	}
	height, _ := strconv.Atoi(string(hm[1]))
	return boxes, height
}

// pageWidth is the browser window's width in CSS px.
const pageWidth = 1200

func writePage(t *testing.T, html []byte) string {
	t.Helper()
	page := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(page, html, 0o644); err != nil {
		t.Fatal(err)
	}
	return page
}

// screenshot renders html (as is, no script) at pageWidth × height and decodes the PNG.
// TRANSFERLAB_KEEP_SCREENSHOT=path keeps a copy for a human to look at.
func screenshot(t *testing.T, bin string, html []byte, height int, keep string) image.Image {
	t.Helper()
	page := writePage(t, html)
	shot := filepath.Join(filepath.Dir(page), "shot.png")
	runChromium(t, bin, page, "--screenshot="+shot, fmt.Sprintf("--window-size=%d,%d", pageWidth, height+50))
	data, err := os.ReadFile(shot)
	if err != nil {
		t.Fatal(err)
	}
	if keep != "" {
		if err := os.WriteFile(keep, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	return img
}

// inkIn counts, inside b, pixels that are not near-white (any channel < 200)
// and pixels of a series colour (max − min channel > 80: text, axes and grid
// are grey, so only drawn series count).
func inkIn(img image.Image, b chartBox) (ink, colour int) {
	bounds := img.Bounds()
	for y := b.y; y < b.y+b.h && y < bounds.Max.Y; y++ {
		for x := b.x; x < b.x+b.w && x < bounds.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			r, g, bl = r>>8, g>>8, bl>>8
			if r < 200 || g < 200 || bl < 200 {
				ink++
			}
			if max(r, g, bl)-min(r, g, bl) > 80 {
				colour++
			}
		}
	}
	return ink, colour
}

// Thresholds: a drawn chart has axes, ticks and labels (well over 1 % of its
// box in ink) and at least one series 2 pt (≈ 2.7 px) wide across a few
// hundred px (≥ 300 coloured px). An empty box has neither.
const (
	minInkFraction = 0.01
	minColourPx    = 300
)

func TestBrowserChartsDraw(t *testing.T) {
	bin := chromium(t)
	var b bytes.Buffer
	if err := WriteHTML(&b, analysistest.FixtureResults(t)); err != nil {
		t.Fatal(err)
	}
	html := b.Bytes()
	wantCharts := bytes.Count(html, []byte(`<svg class="chart"`))
	// The layout is read once: chart boxes have a fixed CSS size, so the
	// blank control page below lays out identically.
	boxes, height := layoutCharts(t, bin, html)
	if len(boxes) != wantCharts {
		t.Fatalf("browser laid out %d charts, the page has %d", len(boxes), wantCharts)
	}

	t.Run("every chart drew", func(t *testing.T) {
		img := screenshot(t, bin, html, height, os.Getenv("TRANSFERLAB_KEEP_SCREENSHOT"))
		for _, box := range boxes {
			if box.w < 200 || box.h < 100 {
				t.Errorf("chart %s laid out at %dx%d px: too small to read", box.id, box.w, box.h)
				continue
			}
			ink, colour := inkIn(img, box)
			t.Logf("chart %s at (%d,%d) %dx%d: %d ink px, %d series-colour px", box.id, box.x, box.y, box.w, box.h, ink, colour)
			if float64(ink) < minInkFraction*float64(box.w*box.h) || colour < minColourPx {
				t.Errorf("chart %s did not draw: %d ink px of %d, %d series-colour px", box.id, ink, box.w*box.h, colour)
			}
		}
	})

	// Negative control: the same page with every chart emptied must fail the
	// check above, so the check can tell drawn charts from blank ones.
	t.Run("blank charts are detected", func(t *testing.T) {
		blank := regexp.MustCompile(`(?s)(<svg class="chart"[^>]*>).*?</svg>`).ReplaceAll(html, []byte("$1</svg>"))
		if n := bytes.Count(blank, []byte(`<svg class="chart"`)); n != wantCharts {
			t.Fatalf("blank page has %d charts, want %d", n, wantCharts)
		}
		img := screenshot(t, bin, blank, height, "")
		for _, box := range boxes {
			ink, colour := inkIn(img, box)
			if float64(ink) >= minInkFraction*float64(box.w*box.h) && colour >= minColourPx {
				t.Errorf("blank chart %s passed the drawn check (%d ink px, %d colour px)", box.id, ink, colour)
			}
		}
	})
}

// layoutScript, appended to the page under test only, lists in the DOM what
// a reader at the window's width would find broken:
//   - a table whose right edge runs past the page, or a page wider than the window;
//   - a chart's text (title, axis label, tick, legend) reaching past its chart's
//     box by more than textSlack px (clipped; a glyph box overhangs by up to
//     1.5 px at the edge, the cut title read 3 px past it);
//   - a coloured series line crossing a text of its chart (a legend over a line);
//   - a plotted mark (point, line, error bar) not inside its data area (the
//     <svg>'s data-frame, in viewBox units) by at least 1 px;
//   - two adjacent tick labels on an axis that read the same;
//   - a legend glyph (line or circle, dashed or solid, of a colour) that the
//     data area does not draw: a legend line must match a drawn line at least
//     12 px long (an error bar's cap is shorter), a legend circle a drawn circle.
//
// Series are told from text, axes and grid by colour (max − min channel > 80).
const layoutScript = `<script>
(function () {
  var bad = [];
  var width = document.documentElement.clientWidth;
  var textSlack = 2;
  if (document.documentElement.scrollWidth > width + 1) bad.push("the page is " + document.documentElement.scrollWidth + " px wide, past the " + width + " px window");
  document.querySelectorAll("table").forEach(function (t, i) {
    var r = t.getBoundingClientRect();
    if (r.right > width + 1) {
      var th = t.querySelector("th");
      bad.push("table " + i + " (" + (th ? th.textContent : "") + ") is " + Math.round(r.right) + " px wide, past the " + width + " px page");
    }
  });
  function coloured(el) {
    var m = getComputedStyle(el).stroke.match(/\d+/g);
    return m && m.length >= 3 && Math.max(+m[0], +m[1], +m[2]) - Math.min(+m[0], +m[1], +m[2]) > 80;
  }
  function inside(r, b, slack) {
    return r.left >= b.left - slack && r.right <= b.right + slack && r.top >= b.top - slack && r.bottom <= b.bottom + slack;
  }
  function screenBox(svg, attr) {
    var v = (svg.getAttribute(attr) || "").split(" ").map(Number);
    if (v.length !== 4 || !(v[2] > v[0])) return null;
    var ctm = svg.getScreenCTM();
    var a = new DOMPoint(v[0], v[1]).matrixTransform(ctm), b = new DOMPoint(v[2], v[3]).matrixTransform(ctm);
    return {left: a.x, top: a.y, right: b.x, bottom: b.y};
  }
  function mark(el) {
    var d = el.getAttribute("d") || "";
    var st = getComputedStyle(el);
    return {el: el, r: el.getBoundingClientRect(), colour: st.stroke, circle: /A/.test(d), dashed: st.strokeDasharray !== "none" && st.strokeDasharray !== ""};
  }
  function distinct(id, axis, texts, key) {
    texts.sort(function (a, b) { return key(a.r) - key(b.r); });
    for (var i = 1; i < texts.length; i++) {
      if (texts[i].t === texts[i - 1].t) bad.push(id + ": adjacent " + axis + " tick labels both read '" + texts[i].t + "'");
    }
  }
  document.querySelectorAll("figure").forEach(function (f) {
    var svg = f.querySelector("svg");
    var box = svg.getBoundingClientRect();
    var frame = screenBox(svg, "data-frame"), legend = screenBox(svg, "data-legend");
    if (!frame) {
      bad.push(f.id + ": the chart has no data-frame");
      frame = {left: box.left, top: box.top, right: box.right, bottom: box.bottom};
    }
    var lines = Array.from(svg.querySelectorAll("path, polyline, line")).filter(coloured);
    var drawn = [], glyphs = [];
    lines.forEach(function (el) {
      var m = mark(el);
      var cx = (m.r.left + m.r.right) / 2, cy = (m.r.top + m.r.bottom) / 2;
      if (legend && cx >= legend.left && cx <= legend.right && cy >= legend.top && cy <= legend.bottom) glyphs.push(m); else drawn.push(m);
    });
    drawn.forEach(function (m) {
      if (!inside(m.r, {left: frame.left + 1, top: frame.top + 1, right: frame.right - 1, bottom: frame.bottom - 1}, 0)) {
        bad.push(f.id + ": a plotted mark (" + (m.circle ? "point" : "line") + ") is not inside the data area (" + [Math.round(m.r.left - frame.left), Math.round(m.r.top - frame.top), Math.round(frame.right - m.r.right), Math.round(frame.bottom - m.r.bottom)].join(",") + " px inside left, top, right, bottom)");
      }
    });
    glyphs.forEach(function (g) {
      var ok = drawn.some(function (m) {
        return m.colour === g.colour && m.circle === g.circle && m.dashed === g.dashed && (m.circle || m.r.width > 12);
      });
      if (!ok) bad.push(f.id + ": the legend shows a " + (g.dashed ? "dashed " : "") + (g.circle ? "circle" : "line") + " in " + g.colour + " that the chart does not draw");
    });
    var yTicks = [], xTicks = [];
    svg.querySelectorAll("text").forEach(function (tx) {
      var r = tx.getBoundingClientRect();
      var t = tx.textContent.trim();
      if (!t || r.width === 0) return;
      if (!inside(r, box, textSlack)) {
        bad.push(f.id + ": text '" + tx.textContent + "' is clipped by the chart's box (" + [Math.round(r.left - box.left), Math.round(r.top - box.top), Math.round(box.right - r.right), Math.round(box.bottom - r.bottom)].join(",") + " px inside left, top, right, bottom)");
      }
      var rotated = tx.closest("g[transform*=rotate]") !== null;
      if (!rotated && r.right <= frame.left + 1) yTicks.push({t: t, r: r});
      if (!rotated && r.top >= frame.bottom - 1 && r.left >= frame.left - 20 && r.right <= frame.right + 20) xTicks.push({t: t, r: r});
      for (var i = 0; i < lines.length; i++) {
        var ctm = lines[i].getScreenCTM();
        if (!ctm || !lines[i].isPointInStroke) continue;
        var inv = ctm.inverse(), hit = false;
        for (var x = r.left + 1; x < r.right - 1 && !hit; x += 2) {
          for (var y = r.top + 1; y < r.bottom - 1 && !hit; y += 2) {
            var p = new DOMPoint(x, y).matrixTransform(inv);
            hit = lines[i].isPointInStroke(p);
          }
        }
        if (hit) { bad.push(f.id + ": a series line crosses the text '" + tx.textContent + "'"); break; }
      }
    });
    // The y tick labels are the upright texts left of the data area (its label
    // is rotated); the x tick labels the row of texts nearest below it.
    distinct(f.id, "y", yTicks, function (r) { return r.top; });
    var xt = Math.min.apply(null, xTicks.map(function (o) { return o.r.top; }));
    distinct(f.id, "x", xTicks.filter(function (o) { return Math.abs(o.r.top - xt) < 2; }), function (r) { return r.left; });
  });
  document.body.setAttribute("data-layout", JSON.stringify(bad));
})();
</script>`

// layoutWidths are the window widths the layout check reads the report at:
// a 1,280 px laptop screen and the 1,400 px the report is held to.
var layoutWidths = []int{1280, 1400}

var layoutRe = regexp.MustCompile(`data-layout="([^"]*)"`)

// layoutProblems loads html with layoutScript in a window width px wide and
// returns what the script found.
func layoutProblems(t *testing.T, bin string, html []byte, width int) []string {
	t.Helper()
	page := writePage(t, bytes.Replace(html, []byte("</body>"), []byte(layoutScript+"</body>"), 1))
	dom := runChromium(t, bin, page, "--dump-dom", fmt.Sprintf("--window-size=%d,1000", width))
	m := layoutRe.FindSubmatch(dom)
	if m == nil {
		t.Fatalf("--dump-dom has no layout report: did the page load? (%d bytes of DOM)", len(dom))
	}
	var bad []string
	if err := json.Unmarshal([]byte(htmlstd.UnescapeString(string(m[1]))), &bad); err != nil {
		t.Fatalf("layout report %q: %v", m[1], err)
	}
	return bad
}

// TestBrowserLayout: at 1,280 and 1,400 px no table runs past the page, no
// chart text is clipped, no series line crosses a legend or label, every
// plotted mark lies inside its data area, adjacent tick labels differ and
// every legend glyph is drawn in its chart, on the fixture's report and on
// the quickstart's. A page broken in each of these ways is caught (negative
// control).
func TestBrowserLayout(t *testing.T) {
	bin := chromium(t)
	q, err := report.ReadResults("testdata/quickstart-results.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"fixture", "quickstart"} {
		r := q
		if name == "fixture" {
			r = analysistest.FixtureResults(t)
		}
		var b bytes.Buffer
		if err := WriteHTML(&b, r); err != nil {
			t.Fatal(err)
		}
		for _, w := range layoutWidths {
			for _, p := range layoutProblems(t, bin, b.Bytes(), w) {
				t.Errorf("%s report.html at %d px: %s", name, w, p)
			}
		}
		if name == "fixture" {
			brokenLayoutCaught(t, bin, b.Bytes())
		}
	}
}

// brokenLayoutCaught breaks page (the fixture's report.html, ≥ 4 charts) in
// each way layoutScript looks for, one chart each, and checks that each is
// reported: a table 3,000 px wide; chart 0's data area shrunk to a corner (its
// marks fall outside); chart 1's tick labels all reading "1"; a dashed red
// line, drawn by no series, in chart 2's legend; chart 3's title moved 30 pt
// left of its box.
func brokenLayoutCaught(t *testing.T, bin string, page []byte) {
	t.Helper()
	ids := regexp.MustCompile(`<figure id="([^"]+)">`).FindAllSubmatch(page, -1)
	if len(ids) < 4 {
		t.Fatalf("the fixture's report has %d charts, the negative control needs 4", len(ids))
	}
	figs := regexp.MustCompile(`(?s)<figure id="[^"]+">.*?</figure>`).FindAllIndex(page, -1)
	fig := func(i int) []byte { return page[figs[i][0]:figs[i][1]] }
	broken := [][]byte{
		regexp.MustCompile(`data-frame="[^"]*"`).ReplaceAll(fig(0), []byte(`data-frame="0 0 1 1"`)),
		regexp.MustCompile(`(font-size:10px">)[^<]+(</text>)`).ReplaceAll(fig(1), []byte("${1}1${2}")),
		fig(2),
		fig(3),
	}
	// A chart's first <text> is its title.
	m := regexp.MustCompile(`(?s)^.*?<text x="([^"]*)"`).FindSubmatchIndex(broken[3])
	if m == nil {
		t.Fatal("chart 3 has no text")
	}
	broken[3] = append(append(append([]byte{}, broken[3][:m[2]]...), "-30"...), broken[3][m[3]:]...)
	lm := regexp.MustCompile(`data-legend="([\d.]+) ([\d.]+) `).FindSubmatch(broken[2])
	if lm == nil {
		t.Fatal("chart 2 has no legend box")
	}
	l, _ := strconv.ParseFloat(string(lm[1]), 64)
	top, _ := strconv.ParseFloat(string(lm[2]), 64)
	dashed := fmt.Sprintf(`<path d="M%.1f,%.1fL%.1f,%.1f" style="fill:none;stroke:#D62728;stroke-width:2;stroke-dasharray:6,3" />`, l+2, top+4, l+22, top+4)
	broken[2] = regexp.MustCompile(`(<svg [^>]*>)`).ReplaceAll(broken[2], []byte("${1}"+dashed))
	var out []byte
	last := 0
	for i := range broken {
		out = append(append(out, page[last:figs[i][0]]...), broken[i]...)
		last = figs[i][1]
	}
	out = append(out, page[last:]...)
	out = bytes.Replace(out, []byte("<table>"), []byte(`<table style="width:3000px">`), 1)
	bad := strings.Join(layoutProblems(t, bin, out, layoutWidths[0]), "\n")
	for _, want := range []string{
		"px wide, past the",
		string(ids[0][1]) + ": a plotted mark",
		string(ids[1][1]) + ": adjacent y tick labels both read '1'",
		string(ids[1][1]) + ": adjacent x tick labels both read '1'",
		string(ids[2][1]) + ": the legend shows a dashed line",
		string(ids[3][1]) + ": text",
	} {
		if !strings.Contains(bad, want) {
			t.Errorf("the broken page's report lacks %q; it reads:\n%s", want, bad)
		}
	}
}
