package experiment

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/transferlab/transferlab/internal/interrupt"
	"github.com/transferlab/transferlab/render"
)

// cancelOnLine is a log that cancels the run (cause) as the n-th line
// holding mark is written: the search logs "probe at" just before it runs
// a probe, so n = 2 stops the search with its first probe done and its
// second never measured.
type cancelOnLine struct {
	mu     sync.Mutex
	buf    strings.Builder
	mark   string
	n      int
	cancel func(error)
	cause  error
}

func (c *cancelOnLine) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Write(p)
	if strings.Count(c.buf.String(), c.mark) == c.n && c.cancel != nil {
		c.cancel(c.cause)
		c.cancel = nil
	}
	return len(p), nil
}

// TestInterruptedSearchSaysSo: a run interrupted during its capacity
// search says so wherever the capacity is given (results.json's
// capacity_search.interrupted, the capacity line, the headline, the
// report): by what, after how many probes, each arm's bracket so far, and
// that run --resume runs the search again from the kept sweep cells; not
// the sweep's "unknown … sweep higher loads", which named no interruption.
func TestInterruptedSearchSaysSo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	trace := capSearchTrace(t, dir)
	text := strings.Replace(fmt.Sprintf(capSearchConfig, trace), "{relative_precision: 0.25, max_rps: 40}", "{relative_precision: 0.1, max_rps: 40, probe_warmup: 500ms, probe_duration: 2s}", 1)
	cfg, err := Parse(strings.NewReader(text), "capsearch.yaml", ".")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	log := &cancelOnLine{mark: "probe at", n: 2, cancel: cancel, cause: interrupt.Error{Sig: os.Interrupt}}
	res, err := Run(ctx, cfg, Options{OutDir: out, ConfigRaw: []byte(text), Log: log})
	if err == nil || res == nil || res.Complete {
		t.Fatalf("interrupted run: err %v, results %v", err, res)
	}
	cs := res.CapacitySearch
	if cs == nil || len(cs.Arms) == 0 {
		t.Fatalf("capacity_search %+v", cs)
	}
	for _, want := range []string{"interrupted after 1 search probe (interrupted by SIGINT)", "baseline: bracket [", "run --resume " + out, "runs the search again from the sweep's cells"} {
		if !strings.Contains(cs.Interrupted, want) {
			t.Errorf("capacity_search.interrupted %q does not say %q", cs.Interrupted, want)
		}
	}
	if a := cs.Arms[len(cs.Arms)-1]; !strings.Contains(a.Stopped, "interrupted by SIGINT") || !strings.Contains(a.CapacityRPS.Note, "interrupted by SIGINT") {
		t.Errorf("the interrupted arm's stop %q and note %q do not name the interruption", a.Stopped, a.CapacityRPS.Note)
	}
	md, err := os.ReadFile(filepath.Join(out, MarkdownFile))
	if err != nil {
		t.Fatal(err)
	}
	for what, s := range map[string]string{"capacity line": render.CapacitySearchLine(*res, "fast"), "headline": render.Headline(*res), "report.md": string(md)} {
		if !strings.Contains(s, "the search was interrupted after 1 search probe (interrupted by SIGINT)") || strings.Contains(s, "sweep higher loads") || what == "report.md" && !strings.Contains(s, "2 search probes (1 cut short)") {
			t.Errorf("%s does not name the interrupted search (or advises sweeping higher):\n%s", what, s)
		}
	}

	// What it says of --resume is so: the sweep's cells are kept and the
	// search runs to its end.
	res, err = Run(context.Background(), cfg, Options{OutDir: out, ConfigRaw: []byte(text), Log: &strings.Builder{}, Resume: true})
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if res.ResumedFrom == nil || res.ResumedFrom.KeptCells != 4 || res.CapacitySearch == nil || res.CapacitySearch.Interrupted != "" || len(res.CapacitySearch.Gains) != 1 {
		t.Errorf("resumed: %+v, capacity_search %+v", res.ResumedFrom, res.CapacitySearch)
	}
}
