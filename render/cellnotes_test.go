package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/transferlab/transferlab/analysis"
	"github.com/transferlab/transferlab/analysis/analysistest"
	"github.com/transferlab/transferlab/report"

	"github.com/transferlab/transferlab/loadgen"
)

// TestCellNotesInMarkdown checks report.md says what the cell's counters
// found: the cap's queue, missing usage, prompt
// mismatches, and the client-bound flag with its dispatch-lag rule.
func TestCellNotesInMarkdown(t *testing.T) {
	t.Parallel()
	c := analysis.BuildCell(analysistest.WindowRecords(), analysis.CellOptions{Arm: "baseline", OfferedLoadRPS: 2})
	var b bytes.Buffer
	if err := WriteMarkdown(&b, report.Results{SchemaVersion: report.SchemaVersion, Complete: true, Cells: []report.Cell{c}}); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"in-flight cap queued 1 (sent late, in order)",
		"missing usage 1 (output tokens from token events)",
		"prompt mismatches 1/1 (below)",
		"prompt mismatches: 1 of 1 requests",
		"late sends, not client-bound (1 of 2 sends more than 1.00 ms late (dispatch lag max 2.000 ms))",
		"late sends, not client-bound: fewer late sends than that",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	recs := analysistest.HandRecords()
	recs[2].OutputTokensSource = loadgen.SourceUsage // hand record 2 is the one without usage
	quiet := analysis.BuildCell(recs, analysis.CellOptions{})
	b.Reset()
	if err := WriteMarkdown(&b, report.Results{SchemaVersion: report.SchemaVersion, Complete: true, Cells: []report.Cell{quiet}}); err != nil {
		t.Fatal(err)
	}
	for _, absent := range []string{"in-flight cap", "missing usage", "prompt mismatches", "client-bound", "late sends"} {
		if strings.Contains(b.String(), absent) {
			t.Errorf("report.md mentions %q for a cell where it is zero", absent)
		}
	}
}

// TestPromptCheck: usage.prompt_tokens against the intended input length,
// per cell: how many requests reported it, how many differed and by how
// much (tokens and % of the intended length), and whether the prompts were
// text, whose count depends on the server's tokenizer; report.md says so.
func TestPromptCheck(t *testing.T) {
	t.Parallel()
	recs := []loadgen.Record{
		{RequestID: 0, State: loadgen.StateOK, SentAt: analysistest.MsD, InputTokens: 5, PromptTokens: 5, PromptText: true},
		{RequestID: 1, State: loadgen.StateOK, SentAt: analysistest.MsD, InputTokens: 10, PromptTokens: 13, PromptText: true},
		{RequestID: 2, State: loadgen.StateTimeout, SentAt: analysistest.MsD, InputTokens: 10, PromptTokens: 9, PromptText: true},
		{RequestID: 3, State: loadgen.StateOK, SentAt: analysistest.MsD, InputTokens: 8},
		{RequestID: 4, State: loadgen.StateOK, Warmup: true, SentAt: analysistest.MsD, InputTokens: 8, PromptTokens: 99, PromptText: true},
	}
	c := analysis.BuildCell(recs, analysis.CellOptions{})
	p := c.PromptCheck
	if p.Reported != 3 || p.Mismatches != 2 || c.PromptMismatches != 2 || p.TextPrompts != 3 {
		t.Errorf("prompt check %+v (PromptMismatches %d), want 3 reported, 2 mismatches, 3 text prompts", p, c.PromptMismatches)
	}
	if p.Diff == nil || p.Diff.MinTokens != -1 || p.Diff.MedianTokens != -1 || p.Diff.MaxTokens != 3 || p.Diff.MinPct != -10 || p.Diff.MaxPct != 30 {
		t.Errorf("difference %+v, want tokens -1/-1/3 and -10 %%/30 %%", p.Diff)
	}
	var b bytes.Buffer
	if err := WriteMarkdown(&b, report.Results{SchemaVersion: report.SchemaVersion, Complete: true, Cells: []report.Cell{c}}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"prompt mismatches: 2 of 3 requests that reported usage.prompt_tokens",
		"min -1, median -1, max 3 tokens (-10.0 % to 30.0 %; median -10.0 %)",
		"text prompts: their token count depends on the server's tokenizer",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report.md lacks %q:\n%s", want, b.String())
		}
	}
}
