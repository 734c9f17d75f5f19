package experiment

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/transferlab/transferlab/analysis"
	"github.com/transferlab/transferlab/report"
)

// TestRunWarnsWhenRequestsFail reproduces the new user's run: a request
// timeout far below the simulated server's latency (5 ms; one decode step
// alone takes ~7.6 ms, so every request with two or more output tokens
// times out whatever the machine's load) makes each cell lose more than
// analysis.MaxNotOKShare of its requests. The run completes (Run returns no
// error: the exit status stays 0), and then: a warning per cell naming the
// arm, load, repetition, state counts and first error, on the log, in
// results.json's warnings, in the console summary and in report.md; the
// Amdahl speedups and transfer efficiency refused (null, with the reason);
// the verdict inconclusive saying "not comparable".
func TestRunWarnsWhenRequestsFail(t *testing.T) {
	t.Parallel()
	const cfgText = `
name: failing-requests-test
seed: 3
trace: {path: ../configs/traces/AzureLLMInferenceTrace_conv-head2000.csv, clamp_context: 2048}
load: {rates_rps: [6], warmup: 500ms, duration: 2s, max_requests: 20}
server: {kind: sim}
request: {timeout: 5ms}
arms:
  - name: baseline
  - name: cand
    sim_overrides: {rmsnorm: 2.5}
amdahl: {target_op: rmsnorm}
decision: {metric: e2e, use_mean: true, regression_margin: 0.02}
energy: {disabled: true}
resolution: {aa_replicate: false}
`
	_, res, out, log := runText(t, "f.yaml", cfgText) // a run whose requests fail still completes: no error
	if !res.Complete {
		t.Fatalf("run incomplete: %s", res.IncompleteReason)
	}
	var summary bytes.Buffer
	PrintSummary(&summary, res)
	md, err := os.ReadFile(filepath.Join(out, MarkdownFile))
	if err != nil {
		t.Fatal(err)
	}
	var onDisk report.Results
	if b, err := os.ReadFile(filepath.Join(out, ResultsFile)); err != nil {
		t.Fatal(err)
	} else if err := json.Unmarshal(b, &onDisk); err != nil {
		t.Fatal(err)
	}
	if len(onDisk.Warnings) != 2 {
		t.Fatalf("results.json warnings = %q, want one per cell", onDisk.Warnings)
	}
	for i, arm := range []string{"baseline", "cand"} {
		c := cellOf(t, res, arm, 6)
		notOK, n := analysis.NotOK(c)
		if c.States["timeout"] == 0 || float64(notOK) <= analysis.MaxNotOKShare*float64(n) {
			t.Fatalf("%s: states %v: the 5 ms timeout should have failed most requests", arm, c.States)
		}
		w := onDisk.Warnings[i]
		for _, want := range []string{"arm " + arm + " at 6.00 req/s rep 0", "measured requests", "did not end ok (timeout ", "above the 5 % limit", "first error: timeout", "refused (not comparable)"} {
			if !strings.Contains(w, want) {
				t.Errorf("warning lacks %q:\n%s", want, w)
			}
		}
		for name, text := range map[string]string{"log": log.String(), "console summary": summary.String(), "report.md": string(md)} {
			if !strings.Contains(text, w) {
				t.Errorf("%s does not carry the warning %q", name, w)
			}
		}
	}
	if !strings.Contains(summary.String(), "speedups and efficiency not computed: refused, not comparable") {
		t.Errorf("console Amdahl table does not say why its speedups are missing:\n%s", summary.String())
	}
	if onDisk.Amdahl == nil || len(onDisk.Amdahl.Loads) != 1 {
		t.Fatalf("amdahl section: %+v", onDisk.Amdahl)
	}
	l := onDisk.Amdahl.Loads[0]
	if l.TransferMetric != "" || l.TransferEfficiency != 0 || !strings.Contains(l.Note, "transfer efficiency not computed") || !strings.Contains(l.Note, "not comparable") {
		t.Errorf("amdahl row: efficiency %v (%q), note %q; want none, with the reason", l.TransferEfficiency, l.TransferMetric, l.Note)
	}
	for _, sp := range l.Measured {
		if sp.Value.Reps != 0 || !strings.Contains(sp.Value.Note, "not comparable") {
			t.Errorf("speedup %s %s: %+v, want refused", sp.Metric, sp.Stat, sp.Value)
		}
	}
	if len(onDisk.Verdicts) != 1 || onDisk.Verdicts[0].Outcome != "inconclusive" || !strings.Contains(onDisk.Verdicts[0].Reason, "not comparable") {
		t.Errorf("verdicts %+v, want inconclusive: not comparable", onDisk.Verdicts)
	}
}
