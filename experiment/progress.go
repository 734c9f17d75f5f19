package experiment

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/transferlab/transferlab/loadgen"
)

// progressSink draws one progress bar per cell (requests ended / scheduled)
// on a terminal; it adds nothing to the measurement but a counter bump per
// ended request, throttled redraws off the request path.
type progressSink struct{ bar *progressbar.ProgressBar }

var _ loadgen.Sink = progressSink{}

func newProgressSink(w io.Writer, arm string, rate float64, n int) progressSink {
	return progressSink{bar: progressbar.NewOptions64(int64(n),
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(fmt.Sprintf("%s @ %g req/s", arm, rate)),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(200*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)}
}

func (p progressSink) Add(*loadgen.Record) error { return p.bar.Add(1) }

func (p progressSink) Close() error { return p.bar.Finish() }
