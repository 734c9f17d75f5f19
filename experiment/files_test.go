package experiment

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// burstGPTTrace writes a BurstGPT log of n good rows one second apart with a
// failed request (0 response tokens) after every fourth, the last logged with
// 0 request tokens too, and one malformed row; it returns the path.
func burstGPTTrace(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n")
	for i := range n {
		fmt.Fprintf(&b, "%d,ChatGPT,%d,%d,0,Conversation log\n", i, 20+i, 4+i%3)
		if i%4 == 3 {
			fmt.Fprintf(&b, "%d.5,ChatGPT,%d,0,0,API log\n", i, (i+1)%8*10)
		}
	}
	b.WriteString("oops,ChatGPT,5,5,10,API log\n")
	p := filepath.Join(t.TempDir(), "burst.csv")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRunAccountsForEveryTraceRow: a BurstGPT log whose failed requests are
// dropped by the default policy and whose malformed row is skipped
// (lenient) says so in the console, results.json and both reports; with
// keep_failed the failed requests (one with 0 request tokens) are replayed.
func TestRunAccountsForEveryTraceRow(t *testing.T) {
	t.Parallel()
	path := burstGPTTrace(t, 8) // 8 good rows, 2 failed (lines 6 and 11), malformed line 12
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("keep_failed=%v", keep), func(t *testing.T) {
			t.Parallel()
			cfgText := fmt.Sprintf(`
name: accounting-test
seed: 1
trace: {path: %s, lenient: true, keep_failed: %v}
load: {rates_rps: [4], warmup: 0s, duration: 1s}
server: {kind: sim}
arms:
  - name: baseline
energy: {disabled: true}
`, path, keep)
			_, res, out, log := runText(t, "a.yaml", cfgText)
			var onDisk struct {
				Trace map[string]any `json:"trace"`
			}
			b, err := os.ReadFile(filepath.Join(out, ResultsFile))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &onDisk); err != nil {
				t.Fatal(err)
			}
			want := map[string]any{"rows_read": 11.0, "skipped_rows": 1.0, "rows": 8.0, "skipped_lines": []any{12.0}}
			text := "8 replayed of 11 read; 1 skipped as malformed (line 12); 2 dropped by policy (burstgpt_failed=2)"
			if keep {
				want["rows"] = 10.0
				text = "10 replayed of 11 read; 1 skipped as malformed (line 12)"
			} else {
				want["dropped_by_reason"] = map[string]any{"burstgpt_failed": 2.0}
			}
			for k, v := range want {
				if fmt.Sprint(onDisk.Trace[k]) != fmt.Sprint(v) {
					t.Errorf("results.json trace.%s = %v, want %v", k, onDisk.Trace[k], v)
				}
			}
			var summary bytes.Buffer
			PrintSummary(&summary, res)
			md, _ := os.ReadFile(filepath.Join(out, MarkdownFile))
			html, _ := os.ReadFile(filepath.Join(out, HTMLFile))
			for name, got := range map[string]string{"log": log.String(), "console summary": summary.String(), "report.md": string(md), "report.html": string(html)} {
				if !strings.Contains(got, text) {
					t.Errorf("%s does not account for the trace's rows as %q:\n%s", name, text, got)
				}
			}
			if keep && res.Trace.Rows != 10 {
				t.Errorf("keep_failed replayed %d rows, want 10", res.Trace.Rows)
			}
		})
	}
}

// TestConfigSyntaxErrorLine: an indentation mistake on the quickstart's
// line 17 is reported there, not at the comment yaml.v3 names.
func TestConfigSyntaxErrorLine(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../configs/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	bad := -1
	for i, l := range lines {
		if l == "  warmup: 2s" {
			lines[i], bad = " warmup: 2s", i+1
		}
	}
	if bad < 0 {
		t.Fatal("quickstart.yaml has no `  warmup: 2s` line")
	}
	_, err = Parse(strings.NewReader(strings.Join(lines, "\n")), "q.yaml", "../configs")
	if want := fmt.Sprintf("(line %d): did not find expected key", bad); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want %q", err, want)
	}
}
