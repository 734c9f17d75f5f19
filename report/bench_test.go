package report

import "testing"

// BenchmarkBuildCell measures summarising 100,000 records (≈ 900,000 token
// events): the cost of turning a large run's records into a Cell.
func BenchmarkBuildCell(b *testing.B) {
	recs := synthRecords(fixtureBaseline, 8, 0, 100000, 1)
	opts := CellOptions{SLO: SLO{TTFTMs: 200, TPOTMs: 25}}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		_ = BuildCell(recs, opts)
	}
}

// BenchmarkEarlyStopping200k is the 200,000-request early-stopping test with its bisection.
func BenchmarkEarlyStopping200k(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := EarlyStopping(200000, 1500, 0.99, 0.99); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAnalyze measures the bootstrap over the fixture's 18 cells.
func BenchmarkAnalyze(b *testing.B) {
	r := fixtureResults(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := Analyze(&r, DecisionRule{}); err != nil {
			b.Fatal(err)
		}
	}
}
