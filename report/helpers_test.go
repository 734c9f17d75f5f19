package report

import (
	"encoding/json"
	"flag"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/transferlab/transferlab/loadgen"
)

var update = flag.Bool("update", false, "rewrite report/testdata golden files")

// near is the package's one tolerance helper: |got − want| ≤ tol.
// val reads an optional figure; NaN when nil, so a near() against it fails.
func val(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

func near(t *testing.T, name string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol || math.IsNaN(got) {
		t.Errorf("%s = %v, want %v ± %v", name, got, want, tol)
	}
}

// golden compares got with testdata/name, rewriting it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./report -update to create it)", err)
	}
	if string(want) != string(got) {
		t.Errorf("%s differs from golden (review the diff, then go test ./report -update)\n--- got (first 2000 bytes) ---\n%.2000s", path, got)
	}
}

// synthArm describes a synthetic server: base latencies that grow with load.
type synthArm struct {
	name      string
	ttft      time.Duration // at zero load
	itl       time.Duration // per token gap
	saturates float64       // req/s where queueing blows up
}

// synthRecords makes n deterministic records for one cell: Poisson-ish
// arrivals at load req/s, TTFT and ITL from the arm with seeded jitter,
// queueing growing as 1/(1 − load/saturates), 1 % http errors.
func synthRecords(a synthArm, load float64, rep, n int, seed uint64) []loadgen.Record {
	rng := rand.New(rand.NewPCG(seed, uint64(rep)*7919+uint64(load*1000)))
	rho := load / a.saturates
	queue := 1.0
	if rho < 1 {
		queue = 1 / (1 - rho)
	} else {
		queue = 20
	}
	recs := make([]loadgen.Record, 0, n)
	var t time.Duration
	for i := range n {
		t += time.Duration(rng.ExpFloat64() / load * float64(time.Second))
		r := loadgen.Record{RequestID: i, Arm: a.name, OfferedLoad: load, Repetition: rep, InputTokens: 100, RequestedOutputTokens: 8,
			ScheduledAt: t, SentAt: t + time.Duration(rng.IntN(200))*time.Microsecond}
		if rng.IntN(100) == 0 {
			r.State, r.HTTPStatus, r.Error = loadgen.StateHTTPError, 503, "overloaded"
			recs = append(recs, r)
			continue
		}
		ttft := time.Duration(float64(a.ttft) * queue * (0.7 + 0.6*rng.Float64()))
		at := r.SentAt + ttft
		out := 2 + rng.IntN(14)
		for range out {
			r.Events = append(r.Events, loadgen.TokenEvent{At: at, Tokens: 1})
			at += time.Duration(float64(a.itl) * math.Sqrt(queue) * (0.8 + 0.4*rng.Float64()))
		}
		r.EndAt = at
		r.OutputTokens, r.OutputTokensSource, r.State = out, "usage", loadgen.StateOK
		recs = append(recs, r)
	}
	return recs
}

var (
	fixtureBaseline  = synthArm{name: "baseline", ttft: 40 * time.Millisecond, itl: 10 * time.Millisecond, saturates: 10}
	fixtureCandidate = synthArm{name: "candidate", ttft: 32 * time.Millisecond, itl: 8 * time.Millisecond, saturates: 12.5}
)

// fixtureResults is the golden-ish experiment: two arms, three loads, three
// repetitions of 600 requests, interleaved, simulated, with some sections
// measured and some not.
// Built once and handed out as a deep copy (a JSON round trip), so parallel
// tests can change their copy freely.
func fixtureResults(t testing.TB) Results {
	t.Helper()
	data, err := fixtureJSON()
	if err != nil {
		t.Fatal(err)
	}
	var r Results
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

var fixtureJSON = sync.OnceValues(func() ([]byte, error) {
	r, err := buildFixture()
	if err != nil {
		return nil, err
	}
	return json.Marshal(r)
})

func buildFixture() (Results, error) {
	arms := []synthArm{fixtureBaseline, fixtureCandidate}
	loads := []float64{2, 4, 8}
	order, err := RunOrder([]string{"baseline", "candidate"}, loads, 3)
	if err != nil {
		return Results{}, err
	}
	r := Results{
		SchemaVersion: SchemaVersion, CreatedAt: time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC),
		Simulated: true, Complete: true,
		Manifest: Manifest{ConfigPath: "configs/quickstart.yaml", ConfigSHA256: "c0ffee00c0ffee00c0ffee00", Seed: 7, ArmOrder: []string{"baseline", "candidate"}},
		Trace:    TraceInfo{Source: "synthetic:poisson", Format: "synthetic", SHA256: "feedbeeffeedbeef", Rows: 600, DurationS: 300, MeanRateRPS: 2},
		SLO:      SLO{TTFTMs: 200, TPOTMs: 25, Percentile: 99},
		RunOrder: order,
		Aliases:  DefaultAliases(),
	}
	for i, k := range order {
		a := arms[0]
		if k.Arm == "candidate" {
			a = arms[1]
		}
		recs := synthRecords(a, k.OfferedLoadRPS, k.Repetition, 600, uint64(42+len(a.name))) // arms draw different streams
		c := BuildCell(recs, CellOptions{Arm: k.Arm, OfferedLoadRPS: k.OfferedLoadRPS, Repetition: k.Repetition, Order: i, SLO: r.SLO, CDFPoints: 50})
		r.Cells = append(r.Cells, c)
	}
	r.Amdahl = &AmdahlSection{}
	for i, l := range loads {
		f := 0.5 + 0.05*float64(i) // busier server: more of the wall time is the target op
		bound := 1 / ((1 - f) + f/1.6)
		r.Amdahl.Loads = append(r.Amdahl.Loads, AmdahlLoad{Candidate: "candidate", OfferedLoadRPS: l, FGPU: ptr(f + 0.1), FWall: f, FExcl: ptr(f - 0.05), S: 1.6,
			Bound: bound, BoundLow: bound - 0.03, BoundHigh: bound + 0.03, TransferEfficiency: 0.8, TransferMetric: "tpot mean"})
	}
	r.Energy, r.Cost = &EnergySection{}, &CostSection{}
	for _, c := range r.Cells {
		powerW := 300.0 + 40*c.OfferedLoadRPS
		if c.Arm == "candidate" {
			powerW -= 20
		}
		e := powerW * val(c.WindowS)
		r.Energy.Cells = append(r.Energy.Cells, EnergyCell{Arm: c.Arm, OfferedLoadRPS: c.OfferedLoadRPS, Repetition: c.Repetition, Available: true, Source: "simulated",
			EnergyJ: e, JPerOutputToken: e / float64(c.OutputTokens), JPerRequest: e / float64(c.States["ok"]), MeanPowerW: powerW, PeakPowerW: powerW + 50, IdlePowerW: 90,
			PeakVRAMBytes: 70 << 30, SteadyVRAMBytes: 68 << 30})
		hours := val(c.WindowS) / 3600
		r.Cost.Cells = append(r.Cost.Cells, CostCell{Arm: c.Arm, OfferedLoadRPS: c.OfferedLoadRPS, Repetition: c.Repetition, Currency: "USD", PricePerGPUHour: 3.5, PriceDate: "2026-11-01",
			GPUs: 1, UtilisationAssumption: 1, WindowS: val(c.WindowS), OutputTokens: c.OutputTokens, TotalTokens: c.OutputTokens + c.InputTokens,
			CostPer1MOutputTokens: 3.5 * hours / float64(c.OutputTokens) * 1e6, CostPer1MTotalTokens: 3.5 * hours / float64(c.OutputTokens+c.InputTokens) * 1e6})
	}
	r.Hook = &HookSection{Arms: []HookArm{{Arm: "candidate", Target: "sim:rmsnorm", Candidate: "fused_rmsnorm", ReportSHA256: "abcdef0123456789abcdef", CallsEager: 123456, Receipts: []string{"patched sim:rmsnorm at import"}}}}
	r.Validation = &ValidationSection{Candidates: []ValidationCandidate{{Candidate: "candidate", ReportSHA256: "abcdef0123456789abcdef", Verdict: "pass", S: 1.6,
		Shapes: []ShapeSpeedup{{Shape: "bf16[8,4096]x[4096,4096]", Count: 900, Speedup: 1.7}, {Shape: "bf16[1,4096]x[4096,4096]", Count: 100, Speedup: 1.2, Stress: true}}}}}
	err = Analyze(&r, DecisionRule{RequireValidation: true, RequireReproducible: true})
	return r, err
}
