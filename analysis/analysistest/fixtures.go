package analysistest

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/transferlab/transferlab/analysis"
	"github.com/transferlab/transferlab/report"
	"github.com/transferlab/transferlab/stats"

	"github.com/transferlab/transferlab/loadgen"
)

// near is the package's one tolerance helper: |got − want| ≤ tol.
// val reads an optional figure; NaN when nil, so a near() against it fails.
func Val(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

func Near(t *testing.T, name string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol || math.IsNaN(got) {
		t.Errorf("%s = %v, want %v ± %v", name, got, want, tol)
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
func SynthRecords(a synthArm, load float64, rep, n int, seed uint64) []loadgen.Record {
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
	FixtureBaseline  = synthArm{name: "baseline", ttft: 40 * time.Millisecond, itl: 10 * time.Millisecond, saturates: 10}
	fixtureCandidate = synthArm{name: "candidate", ttft: 32 * time.Millisecond, itl: 8 * time.Millisecond, saturates: 12.5}
)

// fixtureResults is the golden-ish experiment: two arms, three loads, three
// repetitions of 600 requests, interleaved, simulated, with some sections
// measured and some not.
// Built once and handed out as a deep copy (a JSON round trip), so parallel
// tests can change their copy freely.
func FixtureResults(t testing.TB) report.Results {
	t.Helper()
	data, err := fixtureJSON()
	if err != nil {
		t.Fatal(err)
	}
	var r report.Results
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

func buildFixture() (report.Results, error) {
	arms := []synthArm{FixtureBaseline, fixtureCandidate}
	loads := []float64{2, 4, 8}
	order, err := report.RunOrder([]string{"baseline", "candidate"}, loads, 3)
	if err != nil {
		return report.Results{}, err
	}
	r := report.Results{
		SchemaVersion: report.SchemaVersion, CreatedAt: time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC),
		Simulated: true, Complete: true,
		Manifest: report.Manifest{ConfigPath: "configs/quickstart.yaml", ConfigSHA256: "c0ffee00c0ffee00c0ffee00", Seed: 7, ArmOrder: []string{"baseline", "candidate"}},
		Trace:    report.TraceInfo{Source: "synthetic:poisson", Format: "synthetic", SHA256: "feedbeeffeedbeef", Rows: 600, DurationS: 300, MeanRateRPS: 2},
		SLO:      report.SLO{TTFTMs: 200, TPOTMs: 25, Percentile: 99},
		RunOrder: order,
		Aliases:  report.DefaultAliases(),
	}
	for i, k := range order {
		a := arms[0]
		if k.Arm == "candidate" {
			a = arms[1]
		}
		recs := SynthRecords(a, k.OfferedLoadRPS, k.Repetition, 600, uint64(42+len(a.name))) // arms draw different streams
		c := analysis.BuildCell(recs, analysis.CellOptions{Arm: k.Arm, OfferedLoadRPS: k.OfferedLoadRPS, Repetition: k.Repetition, Order: i, SLO: r.SLO, CDFPoints: 50})
		r.Cells = append(r.Cells, c)
	}
	r.Amdahl = &report.AmdahlSection{}
	for i, l := range loads {
		f := 0.5 + 0.05*float64(i) // busier server: more of the wall time is the target op
		bound := 1 / ((1 - f) + f/1.6)
		r.Amdahl.Loads = append(r.Amdahl.Loads, report.AmdahlLoad{Candidate: "candidate", OfferedLoadRPS: l, FGPU: Ptr(f + 0.1), FWall: f, FExcl: Ptr(f - 0.05), S: 1.6,
			Bound: bound, BoundLow: bound - 0.03, BoundHigh: bound + 0.03, TransferEfficiency: 0.8, TransferMetric: "tpot mean"})
	}
	r.Energy, r.Cost = &report.EnergySection{}, &report.CostSection{}
	for _, c := range r.Cells {
		powerW := 300.0 + 40*c.OfferedLoadRPS
		if c.Arm == "candidate" {
			powerW -= 20
		}
		e := powerW * Val(c.WindowS)
		r.Energy.Cells = append(r.Energy.Cells, report.EnergyCell{Arm: c.Arm, OfferedLoadRPS: c.OfferedLoadRPS, Repetition: c.Repetition, Available: true, Source: "simulated",
			EnergyJ: e, JPerOutputToken: e / float64(c.OutputTokens), JPerRequest: e / float64(c.States["ok"]), MeanPowerW: powerW, PeakPowerW: powerW + 50, IdlePowerW: 90,
			PeakVRAMBytes: 70 << 30, SteadyVRAMBytes: 68 << 30})
		hours := Val(c.WindowS) / 3600
		r.Cost.Cells = append(r.Cost.Cells, report.CostCell{Arm: c.Arm, OfferedLoadRPS: c.OfferedLoadRPS, Repetition: c.Repetition, Currency: "USD", PricePerGPUHour: 3.5, PriceDate: "2026-11-01",
			GPUs: 1, UtilisationAssumption: 1, WindowS: Val(c.WindowS), OutputTokens: c.OutputTokens, TotalTokens: c.OutputTokens + c.InputTokens,
			CostPer1MOutputTokens: 3.5 * hours / float64(c.OutputTokens) * 1e6, CostPer1MTotalTokens: 3.5 * hours / float64(c.OutputTokens+c.InputTokens) * 1e6})
	}
	r.Hook = &report.HookSection{Arms: []report.HookArm{{Arm: "candidate", Target: "sim:rmsnorm", Candidate: "fused_rmsnorm", ReportSHA256: "abcdef0123456789abcdef", CallsEager: 123456, Receipts: []string{"patched sim:rmsnorm at import"}}}}
	r.Validation = &report.ValidationSection{Candidates: []report.ValidationCandidate{{Candidate: "candidate", ReportSHA256: "abcdef0123456789abcdef", Verdict: "pass", S: 1.6,
		Shapes: []report.ShapeSpeedup{{Shape: "bf16[8,4096]x[4096,4096]", Count: 900, Speedup: 1.7}, {Shape: "bf16[1,4096]x[4096,4096]", Count: 100, Speedup: 1.2, Stress: true}}}}}
	err = analysis.Analyze(&r, report.DecisionRule{RequireValidation: true, RequireReproducible: true})
	return r, err
}

const MsD = time.Millisecond

// handRecords are four measured requests and one warm-up, with every figure
// worked out by hand in TestBuildCell.
func HandRecords() []loadgen.Record {
	return []loadgen.Record{
		{ // warm-up: must not appear anywhere but WarmupRecords
			RequestID: 0, Warmup: true, State: loadgen.StateOK, ScheduledAt: 0, SentAt: 0,
			Events: []loadgen.TokenEvent{{At: 900 * MsD, Tokens: 1}}, EndAt: 950 * MsD, OutputTokens: 1, OutputTokensSource: "usage",
		},
		{ // reasoning first, then answer, one 2-token event; usage says 4 tokens
			RequestID: 1, State: loadgen.StateOK, ScheduledAt: 0, SentAt: 1 * MsD, InputTokens: 10,
			Events: []loadgen.TokenEvent{{At: 11 * MsD, Tokens: 1, Reasoning: true}, {At: 21 * MsD, Tokens: 1}, {At: 41 * MsD, Tokens: 2}},
			EndAt:  45 * MsD, OutputTokens: 4, OutputTokensSource: "usage",
		},
		{ // one-token answer counted from events, usage mismatch flagged
			RequestID: 2, State: loadgen.StateOK, ScheduledAt: 100 * MsD, SentAt: 100 * MsD, InputTokens: 20,
			Events: []loadgen.TokenEvent{{At: 150 * MsD, Tokens: 1}}, EndAt: 155 * MsD, OutputTokens: 1, OutputTokensSource: "events", UsageMismatch: true,
		},
		{RequestID: 3, State: loadgen.StateHTTPError, ScheduledAt: 200 * MsD, SentAt: 205 * MsD, HTTPStatus: 503, InputTokens: 30},
		{RequestID: 4, State: loadgen.StateNotSent, ScheduledAt: 300 * MsD, InputTokens: 40},
	}
}

// windowRecords exercise the one throughput definition (loadgen.Window):
// warm-up requests straddling the window start and ending after its end, a
// usage/event mismatch, a timeout that delivered tokens, a request the
// in-flight cap held back, missing usage and a prompt mismatch.
func WindowRecords() []loadgen.Record {
	return []loadgen.Record{
		{ // W: warm-up straddling the start (10 ms); usage 8 vs 4 event tokens: weight 2
			RequestID: 0, Warmup: true, State: loadgen.StateOK, SentAt: 0, InputTokens: 5,
			Events: []loadgen.TokenEvent{{At: 5 * MsD, Tokens: 1}, {At: 20 * MsD, Tokens: 1}, {At: 40 * MsD, Tokens: 2}},
			EndAt:  41 * MsD, OutputTokens: 8, OutputTokensSource: loadgen.SourceUsage, UsageMismatch: true,
		},
		{ // A: ok, dispatch lag 0.5 ms
			RequestID: 1, State: loadgen.StateOK, ScheduledAt: 9 * MsD, DispatchedAt: 9*MsD + MsD/2, SentAt: 10 * MsD, InputTokens: 5,
			Events: []loadgen.TokenEvent{{At: 30 * MsD, Tokens: 1}, {At: 50 * MsD, Tokens: 1}},
			EndAt:  52 * MsD, OutputTokens: 2, OutputTokensSource: loadgen.SourceUsage,
		},
		{ // B: timeout after delivering one 3-token event; dispatch lag 2 ms
			RequestID: 2, State: loadgen.StateTimeout, ScheduledAt: 13 * MsD, DispatchedAt: 15 * MsD, SentAt: 15 * MsD, InputTokens: 5,
			Events: []loadgen.TokenEvent{{At: 35 * MsD, Tokens: 3}}, OutputTokens: 3, OutputTokensSource: loadgen.SourceEvents,
		},
		{ // C: held by the cap (its 7 ms dispatch lag is the cap's), no usage, prompt mismatch
			RequestID: 3, State: loadgen.StateOK, QueuedByCap: true, ScheduledAt: 12 * MsD, DispatchedAt: 19 * MsD, SentAt: 20 * MsD,
			InputTokens: 5, PromptTokens: 7,
			Events: []loadgen.TokenEvent{{At: 60 * MsD, Tokens: 1}}, EndAt: 70 * MsD, OutputTokens: 1, OutputTokensSource: loadgen.SourceEvents,
		},
		{ // D: warm-up whose only event falls after the window end (70 ms)
			RequestID: 4, Warmup: true, State: loadgen.StateOK, SentAt: 1 * MsD, InputTokens: 5,
			Events: []loadgen.TokenEvent{{At: 80 * MsD, Tokens: 1}}, EndAt: 81 * MsD, OutputTokens: 1, OutputTokensSource: loadgen.SourceUsage,
		},
	}
}

// mkCell is a cell with the given TPOT p99 and TTFT p99 (ms); other figures are left empty.
func MkCell(arm string, load float64, rep int, tpotP99, ttftP99 float64) report.Cell {
	return report.Cell{Arm: arm, OfferedLoadRPS: load, Repetition: rep, WindowS: Ptr(10),
		TPOT: report.Dist{N: 1000, P99Ms: Ptr(tpotP99), MeanMs: Ptr(tpotP99 / 2)},
		TTFT: report.Dist{N: 1000, P99Ms: Ptr(ttftP99), MeanMs: Ptr(ttftP99 / 2)}}
}

// twoArms builds a complete result with one load and the given per-repetition TPOT p99s.
func TwoArms(base, cand []float64) report.Results {
	r := report.Results{Complete: true, Manifest: report.Manifest{ConfigSHA256: "cfg", ArmOrder: []string{"baseline", "candidate"}}, Trace: report.TraceInfo{SHA256: "tr"}}
	for i := range base {
		r.Cells = append(r.Cells, MkCell("baseline", 4, i, base[i], 100))
	}
	for i := range cand {
		r.Cells = append(r.Cells, MkCell("candidate", 4, i, cand[i], 100))
	}
	return r
}

const Gib = 1 << 30

// queueSeries is n latencies (ms) with the dependence a queue gives:
// log-latency an AR(1) process (φ = 0.9) around ln(1000), so a burst
// slows a run of neighbouring requests together.
func QueueSeries(rng *rand.Rand, n int) []float64 {
	out := make([]float64, n)
	x := 0.0
	for i := range out {
		x = 0.9*x + 0.3*rng.NormFloat64()
		out[i] = 1000 * math.Exp(x)
	}
	return out
}

// pairedCells are a baseline cell and a cell of arm whose requests take
// effect × the baseline's time, each with independent lognormal noise of
// sd sigma, over one shared queue series.
func pairedCells(rng *rand.Rand, arm string, load float64, effect, sigma float64, base []float64) report.Cell {
	c := report.Cell{Arm: arm, OfferedLoadRPS: load, WindowS: Ptr(10)}
	vals := make([]float64, len(base))
	for i, b := range base {
		v := effect * b * math.Exp(sigma*rng.NormFloat64()-sigma*sigma/2)
		vals[i] = v
		c.Requests = append(c.Requests, report.RequestFigures{ID: i, E2EMs: Ptr(v)})
	}
	c.E2E = analysis.BuildDist(vals, stats.DefaultConfidence, 0)
	return c
}

// aaRun is one load with a baseline, its A/A replicate, a candidate 20 %
// faster and one 0.3 % faster, all over one queue series with 2 % noise.
func AARun(t *testing.T) report.Results {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 4))
	base := QueueSeries(rng, 300)
	r := report.Results{Complete: true, Manifest: report.Manifest{ConfigSHA256: "cfg", ArmOrder: []string{"baseline", "big", "small", report.AAArm("baseline")}}, Trace: report.TraceInfo{SHA256: "tr"}}
	r.Cells = []report.Cell{
		pairedCells(rng, "baseline", 4, 1, 0.02, base),
		pairedCells(rng, "big", 4, 0.8, 0.02, base),
		pairedCells(rng, "small", 4, 0.997, 0.02, base),
		pairedCells(rng, report.AAArm("baseline"), 4, 1, 0.02, base),
	}
	return r
}

// failRecords is n measured records of one cell: the fixture's synthetic
// server, ok requests only, with the failed earliest-scheduled ones turned
// into timeouts (the very first with a distinct error text), returned in
// reverse schedule order so the first error must be found by schedule time.
func failRecords(arm string, load float64, rep, n, failed int) []loadgen.Record {
	a := FixtureBaseline
	a.name = arm
	var recs []loadgen.Record
	for _, r := range SynthRecords(a, load, rep, 2*n+10, 11) {
		if r.State == loadgen.StateOK && len(recs) < n {
			recs = append(recs, r)
		}
	}
	for i := range failed {
		r := &recs[i]
		r.Events, r.OutputTokens, r.OutputTokensSource = nil, 0, ""
		r.State, r.HTTPStatus, r.Error = loadgen.StateTimeout, 200, "SSE event 4: read: i/o timeout"
		r.EndAt = r.SentAt + 150*time.Millisecond
		if i == 0 {
			r.Error = "SSE event 3: read: i/o timeout"
		}
	}
	slices.Reverse(recs)
	return recs
}

func FailCell(arm string, load float64, rep, n, failed int) report.Cell {
	return analysis.BuildCell(failRecords(arm, load, rep, n, failed), analysis.CellOptions{Arm: arm, OfferedLoadRPS: load, Repetition: rep})
}

// Ptr is a pointer to v, for optional figures in hand-made cells.
func Ptr(v float64) *float64 { return &v }

// BlocksRun is one load of reps interleaved blocks (repetitions) of a
// baseline, a candidate whose every request takes effect × the baseline's,
// and the A/A replicate, over one queue series of n requests: each cell's
// requests are multiplied by its own run factor exp(runSigma · Z) (the
// simulator's noise model: one draw per cell) and each request by its own
// 2 % noise. The noiseless candidate/baseline ratio is effect.
func BlocksRun(rng *rand.Rand, reps, n int, effect, runSigma float64) report.Results {
	base := QueueSeries(rng, n)
	aa := report.AAArm("baseline")
	r := report.Results{Complete: true, Manifest: report.Manifest{ConfigSHA256: "cfg", ArmOrder: []string{"baseline", "cand", aa}}, Trace: report.TraceInfo{SHA256: "tr"}}
	for rep := range reps {
		for _, a := range []struct {
			arm    string
			effect float64
		}{{"baseline", 1}, {"cand", effect}, {aa, 1}} {
			c := pairedCells(rng, a.arm, 4, a.effect*math.Exp(runSigma*rng.NormFloat64()), 0.02, base)
			c.Repetition = rep
			r.Cells = append(r.Cells, c)
		}
	}
	return r
}
