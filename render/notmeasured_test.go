package render

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/transferlab/transferlab/analysis"
	"github.com/transferlab/transferlab/analysis/analysistest"
	"github.com/transferlab/transferlab/report"

	"github.com/transferlab/transferlab/loadgen"
)

// warmupOnlyRecords is a cell cut by a deadline in its warm-up: the warm-up
// request was sent and answered, the two measured ones were never sent.
func warmupOnlyRecords() []loadgen.Record {
	return []loadgen.Record{
		{RequestID: 0, Warmup: true, State: loadgen.StateOK, SentAt: 0, InputTokens: 5,
			Events: []loadgen.TokenEvent{{At: 5 * analysistest.MsD, Tokens: 1}}, EndAt: 6 * analysistest.MsD, OutputTokens: 1, OutputTokensSource: loadgen.SourceUsage},
		{RequestID: 1, State: loadgen.StateNotSent, ScheduledAt: 300 * analysistest.MsD, InputTokens: 5},
		{RequestID: 2, State: loadgen.StateNotSent, ScheduledAt: 600 * analysistest.MsD, InputTokens: 5},
	}
}

// TestCellNothingMeasured: a cell with no measured request sent has no
// window, throughput, goodput or arrival rate: null in results.json and
// "not measured: no measured request was sent" in both reports, never 0.
func TestCellNothingMeasured(t *testing.T) {
	t.Parallel()
	c := analysis.BuildCell(warmupOnlyRecords(), analysis.CellOptions{Arm: "baseline", OfferedLoadRPS: 3, SLO: report.SLO{TTFTMs: 500}})
	if c.NotMeasured != analysis.NoMeasuredRequestSent || c.WindowS != nil || c.ThroughputTokPerS != nil || c.GoodputRPS != nil || c.ArrivalRateRPS != nil {
		t.Fatalf("cell with no measured send: not_measured %q, window %v, throughput %v, goodput %v, arrival %v",
			c.NotMeasured, c.WindowS, c.ThroughputTokPerS, c.GoodputRPS, c.ArrivalRateRPS)
	}
	js, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"window_s":null`, `"throughput_tok_per_s":null`, `"goodput_rps":null`, `"arrival_rate_rps":null`, `"not_measured":"no measured request was sent"`} {
		if !bytes.Contains(js, []byte(want)) {
			t.Errorf("results.json cell lacks %s: %s", want, js)
		}
	}
	var back report.Cell
	if err := json.Unmarshal(js, &back); err != nil || back.ThroughputTokPerS != nil || back.NotMeasured != c.NotMeasured {
		t.Errorf("round trip: %v, %+v", err, back)
	}

	r := report.Results{SchemaVersion: report.SchemaVersion, Simulated: true, IncompleteReason: "run stopped: deadline", Cells: []report.Cell{c},
		Energy: &report.EnergySection{Cells: []report.EnergyCell{{Arm: "baseline", OfferedLoadRPS: 3, Available: true, EnergyJ: 650, Source: "simulated",
			Missing: []string{"j_per_output_token", "j_per_request"}}}}}
	var md, h bytes.Buffer
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&h, r); err != nil {
		t.Fatal(err)
	}
	for name, page := range map[string]string{"report.md": md.String(), "report.html": h.String()} {
		if !strings.Contains(page, "not measured: no measured request was sent") {
			t.Errorf("%s does not say the cell was not measured", name)
		}
		for _, bad := range []string{"throughput: 0", "= 0 / 0.000 s", "0.000 s", "arrival rate of the measured requests: 0", "<td>0 (0/2)</td>", "goodput: 0"} {
			if strings.Contains(page, bad) {
				t.Errorf("%s prints %q for a cell that measured nothing", name, bad)
			}
		}
	}
	if !strings.Contains(md.String(), "| 650.0 | not measured: no measured request was sent | not measured |") {
		t.Errorf("report.md's energy table gives the window output tokens of a cell that measured nothing:\n%s", md.String())
	}
	if !strings.Contains(md.String(), "| not measured: no measured request was sent | not measured: no measured request was sent | — | — |") {
		t.Errorf("report.md prints an arrival rate for requests never sent:\n%s", md.String())
	}

	// A measured cell keeps its figures and says nothing of the kind.
	m := analysis.BuildCell(analysistest.WindowRecords(), analysis.CellOptions{})
	if m.NotMeasured != "" || m.WindowS == nil || m.ThroughputTokPerS == nil || m.GoodputRPS == nil || m.ArrivalRateRPS == nil {
		t.Errorf("measured cell: %+v", m)
	}
}
