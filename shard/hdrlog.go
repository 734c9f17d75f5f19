package shard

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/transferlab/transferlab/loadgen"
)

// HDRLogFile is the per-cell HDR interval log in a shard's (and a merge's)
// output folder.
const HDRLogFile = "hdr.log"

// hdrMetrics names the loadgen.Histograms fields written to the log, in order.
var hdrMetrics = []string{"ttft", "ttft_intended", "ttfo", "itl", "tpot", "e2e", "schedule_lag"}

func histOf(h *loadgen.Histograms, metric string) *hdrhistogram.Histogram {
	switch metric {
	case "ttft":
		return h.TTFT
	case "ttft_intended":
		return h.TTFTIntended
	case "ttfo":
		return h.TTFO
	case "itl":
		return h.ITL
	case "tpot":
		return h.TPOT
	case "e2e":
		return h.E2E
	case "schedule_lag":
		return h.ScheduleLag
	}
	panic("shard: unknown HDR metric " + metric)
}

// hdrCell is one cell's histograms and its interval on the reference clock.
type hdrCell struct {
	order      int
	start, end time.Time
	hist       *loadgen.Histograms
}

// hdrTag is the log tag of one cell's metric: "cell<order>.<metric>"
// (tags may not hold commas or spaces, so arm names stay out of it).
func hdrTag(order int, metric string) string { return fmt.Sprintf("cell%d.%s", order, metric) }

// parseTag reverses hdrTag.
func parseTag(tag string) (order int, metric string, err error) {
	c, m, ok := strings.Cut(strings.TrimPrefix(tag, "cell"), ".")
	if !ok || !strings.HasPrefix(tag, "cell") {
		return 0, "", fmt.Errorf("tag %q: want cell<order>.<metric>", tag)
	}
	order, err = strconv.Atoi(c)
	if err != nil {
		return 0, "", fmt.Errorf("tag %q: want cell<order>.<metric>", tag)
	}
	return order, m, nil
}

// writeHDRLog writes cells as an hdrhistogram-go interval log: values in µs
// (loadgen.NewHistograms' range and precision), one tagged interval per cell
// and metric, timestamps in seconds since base.
func writeHDRLog(w io.Writer, base time.Time, cells []hdrCell) error {
	lw := hdrhistogram.NewHistogramLogWriter(w)
	if err := lw.OutputLogFormatVersion(); err != nil {
		return err
	}
	if err := lw.OutputComment("transferlab per-cell latency histograms, values in µs; tag cell<order>.<metric>, order as in results.json's run_order"); err != nil {
		return err
	}
	if err := lw.OutputStartTime(base.UnixMilli()); err != nil {
		return err
	}
	if err := lw.OutputBaseTime(base.UnixMilli()); err != nil {
		return err
	}
	lw.SetBaseTime(base.UnixMilli())
	if err := lw.OutputLegend(); err != nil {
		return err
	}
	for _, c := range cells {
		for _, m := range hdrMetrics {
			h := histOf(c.hist, m)
			h.SetTag(hdrTag(c.order, m))
			h.SetStartTimeMs(c.start.UnixMilli())
			h.SetEndTimeMs(c.end.UnixMilli())
			if err := lw.OutputIntervalHistogram(h); err != nil {
				return fmt.Errorf("%s: %w", HDRLogFile, err)
			}
		}
	}
	return nil
}

// readHDRLog reads a log written by writeHDRLog: histograms by tag. A tag
// that appears twice is an error.
func readHDRLog(r io.Reader) (map[string]*hdrhistogram.Histogram, error) {
	lr := hdrhistogram.NewHistogramLogReader(r)
	out := map[string]*hdrhistogram.Histogram{}
	for {
		h, err := lr.NextIntervalHistogram()
		if err != nil {
			return nil, err
		}
		if h == nil {
			return out, nil
		}
		if _, _, err := parseTag(h.Tag()); err != nil {
			return nil, err
		}
		if _, dup := out[h.Tag()]; dup {
			return nil, fmt.Errorf("tag %s appears twice", h.Tag())
		}
		out[h.Tag()] = h
	}
}
