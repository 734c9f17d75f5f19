package analysis_test

import (
	"testing"

	"github.com/transferlab/transferlab/analysis"
	"github.com/transferlab/transferlab/analysis/analysistest"
	"github.com/transferlab/transferlab/report"
)

// BenchmarkBuildCell measures summarising 100,000 records (≈ 900,000 token
// events): the cost of turning a large run's records into a Cell.
func BenchmarkBuildCell(b *testing.B) {
	recs := analysistest.SynthRecords(analysistest.FixtureBaseline, 8, 0, 100000, 1)
	opts := analysis.CellOptions{SLO: report.SLO{TTFTMs: 200, TPOTMs: 25}}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		_ = analysis.BuildCell(recs, opts)
	}
}

// BenchmarkEarlyStopping200k is the 200,000-request early-stopping test with its bisection.
func BenchmarkEarlyStopping200k(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := analysis.EarlyStopping(200000, 1500, 0.99, 0.99); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAnalyze measures the bootstrap over the fixture's 18 cells.
func BenchmarkAnalyze(b *testing.B) {
	r := analysistest.FixtureResults(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := analysis.Analyze(&r, report.DecisionRule{}); err != nil {
			b.Fatal(err)
		}
	}
}
