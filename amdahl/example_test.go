package amdahl_test

import (
	"fmt"
	"time"

	"github.com/transferlab/transferlab/amdahl"
)

// The simulated server's path: per-op totals from the sim's
// profile give f; the override factor is s exactly; the measured speedups
// come from the two arms' per-request latencies.
func ExampleNewRow() {
	// From the sim's profile over the measured window (GET /v1/profile):
	// RMSNorm 30 ms of modelled GPU time, 600 ms busy, 1 s with requests in flight.
	fr, err := amdahl.FromTotals(30*time.Millisecond, 600*time.Millisecond, time.Second)
	if err != nil {
		panic(err)
	}
	// Candidate arm: RMSNorm 2.5× faster (the override factor is s by construction).
	s := amdahl.Exact(2.5)
	// Per-request E2E latencies (ms) of each arm at this offered load.
	// Means 1001.25 and 983 ms: speedup 1001.25/983 = 1.0186. Four requests
	// are too few for a p99 and TTFT/TPOT are left out, so five of the six
	// statistics are refused (Undefined) with a note each.
	base := amdahl.Latencies{E2E: []float64{1000, 1010, 990, 1005}}
	cand := amdahl.Latencies{E2E: []float64{982, 991, 972, 987}}
	m, notes, err := amdahl.MeasureSpeedups(base, cand, amdahl.Seed(1), amdahl.Resamples(500))
	if err != nil {
		panic(err)
	}
	row, err := amdahl.NewRow(amdahl.RowInput{OfferedLoadRPS: 0.5, Simulated: true, Fractions: fr, S: s, Measured: m})
	if err != nil {
		panic(err)
	}
	fmt.Printf("f_gpu %.3f, f_wall %.3f, bound %.4f\n", float64(row.FGPU), float64(row.FWall.Value), float64(row.Bound.Value))
	fmt.Printf("E2E mean speedup %.4f: %s the bound, transfer efficiency %.2f\n",
		float64(row.E2EMean.Measured.Value), row.E2EMean.Verdict, float64(row.E2EMean.Efficiency.Value))
	fmt.Println(len(notes), "statistics refused for too few samples")
	// Output:
	// f_gpu 0.050, f_wall 0.030, bound 1.0183
	// E2E mean speedup 1.0186: inside the bound, transfer efficiency 1.01
	// 5 statistics refused for too few samples
}
