package experiment

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRunRecordsWhatItWrote: a run's Written names exactly the files its
// writers wrote, not what else the folder holds (a file another process
// writes there during the run is newer than the run, yet not the run's).
func TestRunRecordsWhatItWrote(t *testing.T) {
	t.Parallel()
	cfg, err := Parse(strings.NewReader(`
name: written-test
seed: 3
trace: {path: ../configs/traces/AzureLLMInferenceTrace_conv-head2000.csv, clamp_context: 2048}
load: {rates_rps: [4], warmup: 0s, duration: 1s, max_requests: 8}
server: {kind: sim}
arms:
  - name: baseline
energy: {disabled: true}
resolution: {aa_replicate: false}
`), "written.yaml", ".")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	w := &Written{}
	var log bytes.Buffer
	opt := Options{OutDir: out, Log: &log, Written: w}
	opt.AfterCell = func(CellMeasured) { // another process's file, written mid-run
		if err := os.WriteFile(filepath.Join(out, "notes.txt"), []byte("x"), 0o644); err != nil {
			t.Error(err)
		}
	}
	if _, err := Run(context.Background(), cfg, opt); err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	want := []string{RecordsFile, ResultsFile, MarkdownFile, HTMLFile, CellsFile}
	if got := w.Names(nil); !slices.Equal(got, want) {
		t.Errorf("written %v, want %v", got, want)
	}
	for _, f := range want {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("%s recorded as written: %v", f, err)
		}
	}
}
