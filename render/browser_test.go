package render

import (
	"bytes"
	"context"
	"fmt"
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

// runChromium runs headless Chromium on page with extra flags and returns stdout.
func runChromium(t *testing.T, bin, page string, extra ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
		"--force-device-scale-factor=1", "--user-data-dir=" + t.TempDir()}, extra...)
	args = append(args, "file://"+page)
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\nstderr: %s", extra, err, errb.String())
	}
	return out.Bytes()
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
