package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/transferlab/transferlab/analysis"
	"github.com/transferlab/transferlab/canary"
	"github.com/transferlab/transferlab/loadgen"
	"github.com/transferlab/transferlab/report"
)

// runCLI runs the transferlab command tree with args, capturing stdout and
// stderr, and returns the process exit status main would return.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int, err error) {
	t.Helper()
	root := newRootCmd()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(args)
	err = root.ExecuteContext(context.Background())
	switch {
	case err == nil:
		code = 0
	default:
		code = 1
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
		}
	}
	return out.String(), errb.String(), code, err
}

// cellRecords are n ok requests sent 100 ms apart, each with 5 token events
// and an E2E of e2e + i µs (i = 0..n−1: distinct values, known mean).
func cellRecords(n int, e2e time.Duration) []loadgen.Record {
	recs := make([]loadgen.Record, n)
	for i := range recs {
		sent := time.Duration(i) * 100 * time.Millisecond
		end := sent + e2e + time.Duration(i)*time.Microsecond
		r := loadgen.Record{RequestID: i, State: loadgen.StateOK, ScheduledAt: sent, DispatchedAt: sent, SentAt: sent,
			InputTokens: 8, OutputTokens: 5, OutputTokensSource: loadgen.SourceUsage, EndAt: end}
		for k := range 5 {
			r.Events = append(r.Events, loadgen.TokenEvent{At: sent + time.Duration(k+1)*(end-sent)/6, Tokens: 1})
		}
		recs[i] = r
	}
	return recs
}

// writeResults writes a results.json of arm "baseline" at two offered loads
// and four repetitions, every request's E2E near e2e, made from trace sha.
func writeResults(t *testing.T, dir, name, sha string, e2e time.Duration) string {
	t.Helper()
	r := report.Results{
		SchemaVersion: report.SchemaVersion, CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Add(e2e),
		RunID:    rand.Text(), // drawn per run, as a run does (canary.SameRun)
		Complete: true,
		Manifest: report.Manifest{ConfigSHA256: "cfg", Seed: 7, ArmOrder: []string{"baseline"}},
		Trace:    report.TraceInfo{Source: "test.jsonl", Format: "jsonl", SHA256: sha, Rows: 40},
		SLO:      report.SLO{E2EMs: 1000},
	}
	for _, load := range []float64{1, 2} {
		for rep := range 4 {
			d := e2e + time.Duration(rep)*time.Millisecond // repetitions differ a little
			r.Cells = append(r.Cells, analysis.BuildCell(cellRecords(40, d), analysis.CellOptions{
				Arm: "baseline", OfferedLoadRPS: load, Repetition: rep, Order: len(r.Cells), RecordsFile: "records.jsonl", SLO: r.SLO}))
		}
	}
	var b bytes.Buffer
	if err := report.WriteJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCompareCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := writeResults(t, dir, "a.json", "trace-1", 100*time.Millisecond)
	faster := writeResults(t, dir, "b.json", "trace-1", 50*time.Millisecond)
	slower := writeResults(t, dir, "slow.json", "trace-1", 200*time.Millisecond)
	otherTrace := writeResults(t, dir, "other.json", "trace-2", 50*time.Millisecond)
	rule := []string{"--metric", "e2e", "--mean", "--resamples", "500"}

	t.Run("different traces refused without --force, naming what differs", func(t *testing.T) {
		_, _, code, err := runCLI(t, append([]string{"compare", base, otherTrace}, rule...)...)
		if err == nil || code != 1 {
			t.Fatalf("code %d, err %v; want a refusal (exit 1)", code, err)
		}
		for _, want := range []string{"trace.sha256: A=trace-1, B=trace-2", "--force"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
	})
	t.Run("--force compares and lists the differences on stderr", func(t *testing.T) {
		out, errOut, code, err := runCLI(t, append([]string{"compare", base, otherTrace, "--force"}, rule...)...)
		if err != nil || code != 0 {
			t.Fatalf("code %d, err %v", code, err)
		}
		if !strings.Contains(errOut, "comparing despite 1 differences") || !strings.Contains(errOut, "trace.sha256") {
			t.Errorf("stderr does not list the difference: %q", errOut)
		}
		if !strings.Contains(out, "A:baseline") || !strings.Contains(out, "B:baseline") {
			t.Errorf("report.md on stdout lacks the two arms:\n%.1500s", out)
		}
	})
	t.Run("--json parses and carries the verdict", func(t *testing.T) {
		out, _, code, err := runCLI(t, append([]string{"compare", base, faster, "--json"}, rule...)...)
		if err != nil || code != 0 {
			t.Fatalf("code %d, err %v", code, err)
		}
		var c canary.Comparison
		if err := json.Unmarshal([]byte(out), &c); err != nil {
			t.Fatalf("--json output does not parse: %v\n%.500s", err, out)
		}
		if len(c.Differences) != 0 || c.Forced || len(c.Results.Cells) != 16 {
			t.Errorf("differences %v forced %t cells %d; want none, false, 16", c.Differences, c.Forced, len(c.Results.Cells))
		}
		// E2E halves: the mean ratio's interval lies far below 1.
		if len(c.Results.Verdicts) != 1 || c.Results.Verdicts[0].Outcome != "pass" || c.Results.Verdicts[0].Candidate != "B:baseline" {
			t.Errorf("verdicts %+v, want B:baseline pass", c.Results.Verdicts)
		}
	})
	t.Run("--exit-code", func(t *testing.T) {
		incomplete := writeResults(t, t.TempDir(), "incomplete.json", "trace-1", 50*time.Millisecond)
		rewrite(t, incomplete, func(r *report.Results) { r.Complete, r.IncompleteReason = false, "deadline reached" })
		// A's run folder copied elsewhere is still A's run.
		raw, err := os.ReadFile(base)
		if err != nil {
			t.Fatal(err)
		}
		copied := filepath.Join(t.TempDir(), "copy-of-a", "results.json")
		if err := os.MkdirAll(filepath.Dir(copied), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(copied, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		// Another run of the same config, started in the same instant as A
		// (its created_at equal to A's), is another run.
		sameInstant := writeResults(t, t.TempDir(), "b.json", "trace-1", 50*time.Millisecond)
		var ra report.Results
		if err := json.Unmarshal(raw, &ra); err != nil {
			t.Fatal(err)
		}
		rewrite(t, sameInstant, func(r *report.Results) { r.CreatedAt = ra.CreatedAt })
		cases := []struct {
			name  string
			b     string
			extra []string
			code  int
			want  string
		}{
			{"pass: 0", faster, nil, 0, ""},
			{"fail (E2E doubled): 3", slower, nil, exitFail, "FAIL: mean E2E vs the baseline: 98.5 % higher"},
			// B is faster, but a declared VRAM budget that neither run measured leaves clause c inconclusive.
			{"inconclusive (VRAM not measured): 4", faster, []string{"--vram-budget-bytes", "1000"}, exitInconclusive, "INCONCLUSIVE: peak VRAM within budget"},
			// A given twice: its verdict (no difference) tested nothing, so the gate must not pass.
			{"same run: 5", base, nil, exitSameRun, "A and B are the same run (the same run_id " + ra.RunID},
			{"a copied run folder: 5", filepath.Dir(copied), nil, exitSameRun, "A and B are the same run (the same run_id " + ra.RunID},
			{"another run created in the same instant: 0", sameInstant, nil, 0, ""},
			// B stopped by --deadline: faster, but the gate must not pass on part of a run.
			{"incomplete B: 6", incomplete, nil, exitIncompleteInput, "an incomplete run cannot pass or fail a gate (A: complete; B: incomplete (deadline reached))"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				args := append(append([]string{"compare", base, tc.b, "--exit-code"}, rule...), tc.extra...)
				_, _, code, err := runCLI(t, args...)
				if code != tc.code {
					t.Fatalf("exit %d (err %v), want %d", code, err, tc.code)
				}
				if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
					t.Errorf("err %v, want it to say %q", err, tc.want)
				}
			})
		}
		// Without --exit-code a failing verdict still exits 0 (the report says fail).
		if _, _, code, err := runCLI(t, append([]string{"compare", base, slower}, rule...)...); code != 0 || err != nil {
			t.Errorf("fail without --exit-code: exit %d, err %v; want 0", code, err)
		}
	})
	t.Run("--out writes compare.json, report.md and report.html", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "cmp")
		if _, _, code, err := runCLI(t, append([]string{"compare", base, faster, "--out", out}, rule...)...); code != 0 {
			t.Fatalf("exit %d: %v", code, err)
		}
		r, err := report.ReadResults(filepath.Join(out, "compare.json"))
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Verdicts) != 1 || r.Verdicts[0].Outcome != "pass" {
			t.Errorf("compare.json verdicts %+v", r.Verdicts)
		}
		for _, f := range []string{"report.md", "report.html"} {
			if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
				t.Errorf("%s: %v (size %v)", f, err, st)
			}
		}
	})
	t.Run("--out refuses a symlink to a folder", func(t *testing.T) {
		dir := t.TempDir()
		target, link := filepath.Join(dir, "creal"), filepath.Join(dir, "clink")
		if err := os.Mkdir(target, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		for _, extra := range [][]string{nil, {"--overwrite"}} {
			_, _, code, err := runCLI(t, append(append([]string{"compare", base, faster, "--out", link}, rule...), extra...)...)
			if code != 1 || err == nil || !strings.HasPrefix(err.Error(), "compare: --out "+link+" is a symbolic link") {
				t.Errorf("%v: exit %d: %v, want a refusal naming --out once and the link", extra, code, err)
			}
		}
		if entries, _ := os.ReadDir(target); len(entries) != 0 {
			t.Errorf("the link's target now holds %d entries, want none", len(entries))
		}
	})
	t.Run("--out refuses a folder holding files unless --overwrite, never through a symlink", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "cmp")
		if err := os.Mkdir(out, 0o755); err != nil {
			t.Fatal(err)
		}
		notes := filepath.Join(out, "report.md")
		if err := os.WriteFile(notes, []byte("my notes"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, code, err := runCLI(t, append([]string{"compare", base, faster, "--out", out}, rule...)...)
		if code != 1 || err == nil || !strings.Contains(err.Error(), "already holds files") || !strings.Contains(err.Error(), "--overwrite") {
			t.Errorf("a folder holding report.md: exit %d, err %v; want 1 saying it holds files and naming --overwrite", code, err)
		}
		if b, _ := os.ReadFile(notes); string(b) != "my notes" {
			t.Errorf("report.md overwritten without --overwrite: %.80q", b)
		}
		if _, _, code, err := runCLI(t, append([]string{"compare", base, faster, "--out", out, "--overwrite"}, rule...)...); code != 0 {
			t.Fatalf("--overwrite: exit %d: %v", code, err)
		}
		if b, _ := os.ReadFile(notes); string(b) == "my notes" {
			t.Errorf("--overwrite left report.md unwritten")
		}
		// A symlink in the folder is never written through, even with
		// --overwrite: the link itself is replaced by the report.
		target := filepath.Join(t.TempDir(), "elsewhere.md")
		if err := os.WriteFile(target, []byte("keep"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(notes); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, notes); err != nil {
			t.Fatal(err)
		}
		runCLI(t, append([]string{"compare", base, faster, "--out", out, "--overwrite"}, rule...)...)
		if b, _ := os.ReadFile(target); string(b) != "keep" {
			t.Errorf("written through the symlink: %.80q", b)
		}
	})
	t.Run("bad input names the file", func(t *testing.T) {
		missing := filepath.Join(dir, "none.json")
		_, _, code, err := runCLI(t, "compare", base, missing)
		if code != 1 || err == nil || !strings.Contains(err.Error(), missing) {
			t.Errorf("exit %d, err %v; want 1 naming %s", code, err, missing)
		}
		if _, _, code, _ := runCLI(t, "compare", base); code != 1 {
			t.Errorf("one argument: exit %d, want 1", code)
		}
	})
}

// rewrite reads the results.json at path, applies edit and writes it back.
func rewrite(t *testing.T, path string, edit func(*report.Results)) {
	t.Helper()
	r, err := report.ReadResults(path)
	if err != nil {
		t.Fatal(err)
	}
	edit(&r)
	var b bytes.Buffer
	if err := report.WriteJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCompareDefaultsAndInputs: the help states that rule flags default to
// A's recorded rule (no flag default of its own is shown), a compare with no
// rule flag decides by A's rule, and the report names A and B by path and
// created time.
func TestCompareDefaultsAndInputs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := writeResults(t, dir, "a.json", "trace-1", 100*time.Millisecond)
	b := writeResults(t, dir, "b.json", "trace-1", 50*time.Millisecond)
	recorded := report.DecisionRule{Metric: "e2e", UseMean: true, RegressionMargin: 0.02, Resamples: 300}.WithDefaults()
	rewrite(t, a, func(r *report.Results) { r.Rule = &recorded })
	createdB := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	rewrite(t, b, func(r *report.Results) { r.CreatedAt = createdB })

	t.Run("help states A's rule as the default", func(t *testing.T) {
		out, _, code, err := runCLI(t, "compare", "--help")
		if code != 0 {
			t.Fatalf("exit %d: %v", code, err)
		}
		for _, bad := range []string{`(default "tpot")`, "(default 99)", "(default 0.95)", "(default 2000)"} {
			if strings.Contains(out, bad) {
				t.Errorf("help shows %s, but an absent flag takes A's recorded rule:\n%s", bad, out)
			}
		}
		if n := strings.Count(out, "default: A.json's recorded decision rule"); n != 9 {
			t.Errorf("%d rule flags say they default to A's rule, want 9:\n%s", n, out)
		}
	})
	t.Run("no rule flag: A's recorded rule decides", func(t *testing.T) {
		out, _, code, err := runCLI(t, "compare", a, b, "--json")
		if code != 0 {
			t.Fatalf("exit %d: %v", code, err)
		}
		var c canary.Comparison
		if err := json.Unmarshal([]byte(out), &c); err != nil {
			t.Fatal(err)
		}
		if r := c.Results.Rule; r == nil || r.Metric != "e2e" || !r.UseMean || r.Resamples != 300 {
			t.Errorf("rule %+v, want A's (e2e mean, 300 resamples)", r)
		}
	})
	t.Run("--percentile alone overrides A's mean", func(t *testing.T) {
		out, _, code, err := runCLI(t, "compare", a, b, "--json", "--percentile", "90")
		if code != 0 {
			t.Fatalf("exit %d: %v", code, err)
		}
		var c canary.Comparison
		if err := json.Unmarshal([]byte(out), &c); err != nil {
			t.Fatal(err)
		}
		if r := c.Results.Rule; r == nil || r.UseMean || r.Percentile != 90 || r.Metric != "e2e" {
			t.Errorf("rule %+v, want e2e p90", r)
		}
	})
	t.Run("report names A and B with paths and created times", func(t *testing.T) {
		out, _, code, err := runCLI(t, "compare", a, b)
		if code != 0 {
			t.Fatalf("exit %d: %v", code, err)
		}
		for _, want := range []*regexp.Regexp{
			regexp.MustCompile(`\| A \| ` + regexp.QuoteMeta(a) + `, created 2026-01-02T03:04:05Z, run_id [A-Z2-7]{26}, arm baseline as A:baseline \|`),
			regexp.MustCompile(`\| B \| ` + regexp.QuoteMeta(b) + `, created 2026-02-03T04:05:06Z, run_id [A-Z2-7]{26}, arm baseline as B:baseline \|`),
			regexp.MustCompile(`\| comparison created \| `),
		} {
			if !want.MatchString(out) {
				t.Errorf("report.md lacks %s:\n%s", want, out)
			}
		}
		if strings.Contains(out, "| created | ") {
			t.Error("an unlabelled created time in a comparison reads as one run's")
		}
	})
}

// TestCompareMetricHelpAgreesWithError: compare --metric's help and the
// error for a metric it refuses list the same metrics, each of which
// compare accepts.
func TestCompareMetricHelpAgreesWithError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := writeResults(t, dir, "a.json", "trace-1", 100*time.Millisecond)
	b := writeResults(t, dir, "b.json", "trace-1", 50*time.Millisecond)
	help := newCompareCmd().Flags().Lookup("metric").Usage
	_, _, _, err := runCLI(t, "compare", a, b, "--metric", "nosuch", "--mean", "--resamples", "200")
	if err == nil {
		t.Fatal("--metric nosuch accepted")
	}
	list := func(s string) string { // "ttft, …, tpot or e2e" as written
		i := strings.Index(s, "ttft")
		j := strings.Index(s[i:], "e2e")
		if i < 0 || j < 0 {
			return ""
		}
		return s[i : i+j+len("e2e")]
	}
	if h, e := list(help), list(err.Error()); h == "" || h != e {
		t.Errorf("help lists %q, the error %q", h, e)
	}
	for _, m := range analysis.DecisionMetrics() {
		if !strings.Contains(help, m) {
			t.Errorf("help %q lacks %s", help, m)
		}
		if _, _, _, err := runCLI(t, "compare", a, b, "--metric", m, "--mean", "--resamples", "200"); err != nil {
			t.Errorf("--metric %s refused: %v", m, err)
		}
	}
	if _, _, _, err := runCLI(t, "compare", a, b, "--metric", "schedule_lag", "--mean", "--resamples", "200"); err == nil {
		t.Error("--metric schedule_lag (the client's lateness) accepted as a decision metric")
	}
}

// TestExitCodeHelp: --exit-code's help gives every status the gate exits
// with, and says that a no-difference result leaving a regression beyond L
// open is not 0 but exitInconclusive.
func TestExitCodeHelp(t *testing.T) {
	out, _, _, err := runCLI(t, "compare", "--help")
	if err != nil {
		t.Fatal(err)
	}
	flat := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{
		"exit 0 when every verdict passes or finds no difference detectable at A's resolution, with no regression beyond L",
		fmt.Sprintf("%d when a verdict is fail", exitFail),
		fmt.Sprintf("%d when a verdict is inconclusive, or passes or finds no difference but leaves a regression beyond L not ruled out", exitInconclusive),
		fmt.Sprintf("%d when A and B are the same run", exitSameRun),
		fmt.Sprintf("%d when A or B is an incomplete run", exitIncompleteInput),
		"1 on bad input",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("compare --help does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(flat, "0 for pass and for no difference") {
		t.Errorf("compare --help still says no difference exits 0 unconditionally:\n%s", out)
	}
}

// TestNoPackagePrefixInErrors: compare's refusals of bad flags and bad
// files speak of the flag, the rule or the file, never of the Go package
// that found the problem ("analysis: ", "canary: ", "report: ", "stats: ").
func TestNoPackagePrefixInErrors(t *testing.T) {
	dir := t.TempDir()
	a := writeResults(t, dir, "a.json", "trace-1", 50*time.Millisecond)
	b := writeResults(t, dir, "b.json", "trace-2", 50*time.Millisecond)
	notResults := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notResults, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{a, a, "--percentile", "42"}, "decision rule: percentile: 42 is not one of 50, 90, 95, 99 or 99.9"},
		{[]string{a, a, "--metric", "foo"}, `decision rule: metric: unknown metric "foo"`},
		{[]string{a, a, "--arm-a", "nope"}, `arm "nope" is not in A`},
		{[]string{a, b}, "the results differ (use --force to compare anyway)"},
		{[]string{notResults, a}, notResults + " is not a results.json"},
		{[]string{filepath.Join(dir, "missing.json"), a}, "no such file"},
	} {
		_, _, code, err := runCLI(t, append([]string{"compare"}, tc.args...)...)
		if code != 1 || err == nil {
			t.Errorf("compare %v: exit %d, err %v; want 1", tc.args, code, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("compare %v: %v; want it to say %q", tc.args, err, tc.want)
		}
		for _, pkg := range []string{"analysis: ", "canary: ", "report: ", "stats: "} {
			if strings.Contains(err.Error(), pkg) {
				t.Errorf("compare %v: %v: a Go package name (%q) reaches the user", tc.args, err, pkg)
			}
		}
	}
}
