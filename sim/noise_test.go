package sim

import (
	"context"
	"fmt"
	"maps"
	"math"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/stat"
)

// TestNoiseSeeded: the same seed draws the same run factor and step factors;
// another seed others; the model off leaves every step's cost as priced.
func TestNoiseSeeded(t *testing.T) {
	cfg := NoiseConfig{RunSigma: 0.03, StepSigma: 0.015, Seed: 7}
	a, b, c := newNoise(cfg), newNoise(cfg), newNoise(NoiseConfig{RunSigma: 0.03, StepSigma: 0.015, Seed: 8})
	if a.run != b.run || a.run == c.run {
		t.Fatalf("run factors: seed 7 %v and %v, seed 8 %v", a.run, b.run, c.run)
	}
	for i := range 100 {
		if fa, fb := a.factor(), b.factor(); fa != fb {
			t.Fatalf("step %d: %v != %v with one seed", i, fa, fb)
		}
	}
	a.redraw()
	b.redraw()
	if a.run != b.run {
		t.Fatalf("redrawn run factors differ with one seed: %v, %v", a.run, b.run)
	}
	// A window's run factor follows from the seed alone: a server that took
	// more steps before the reset (the host's timing decides how many) draws
	// the same next F_run.
	for range 37 {
		a.factor()
	}
	a.redraw()
	b.redraw()
	if a.run != b.run {
		t.Fatalf("third run factor %v after 37 more steps, %v without: the steps moved the run factors' stream", a.run, b.run)
	}

	cm, err := NewCostModel(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	shape := StepShape{DecodeContexts: []int{1000, 1100}}
	priced := cm.Step(shape)
	off := newNoise(NoiseConfig{Seed: 7})
	if got, f := off.apply(priced); f != 1 || got != priced {
		t.Fatalf("noise off changed the step: factor %v, %v vs %v", f, got.Duration(), priced.Duration())
	}
	got, f := newNoise(cfg).apply(priced)
	if want := float64(priced.Duration()) * f; math.Abs(float64(got.Duration())-want) > float64(numOps+2) {
		t.Fatalf("scaled step %v, want %v × %v = %v ns", got.Duration(), priced.Duration(), f, want)
	}
	var sum int64
	for o := range got.Ops {
		sum += int64(got.Ops[o].Total())
		if got.Ops[o].Launches != priced.Ops[o].Launches {
			t.Fatalf("op %v: launches changed", Op(o))
		}
	}
	if sum != int64(got.GPU) {
		t.Fatalf("GPU %v is not the sum of the scaled ops %v", got.GPU, sum)
	}
}

// TestNoiseDistribution: over many seeds, ln F_run has mean ≈ 0 and
// standard deviation ≈ run_sigma; ln F_step within one run has standard
// deviation ≈ step_sigma around ln F_run.
func TestNoiseDistribution(t *testing.T) {
	const n = 4000
	cfg := NoiseConfig{RunSigma: 0.03, StepSigma: 0.015}
	runs := make([]float64, n)
	for i := range runs {
		cfg.Seed = uint64(i)
		runs[i] = math.Log(newNoise(cfg).run)
	}
	m, sd := stat.MeanStdDev(runs, nil)
	// Standard errors: 0.03/√4000 ≈ 0.0005 on the mean, ≈ 0.00034 on the sd.
	if math.Abs(m) > 0.002 || math.Abs(sd-0.03) > 0.0015 {
		t.Fatalf("ln F_run: mean %.5f, sd %.5f; want ≈ 0, ≈ 0.03", m, sd)
	}
	nz := newNoise(cfg)
	steps := make([]float64, n)
	for i := range steps {
		steps[i] = math.Log(nz.factor()) - math.Log(nz.run)
	}
	if m, sd := stat.MeanStdDev(steps, nil); math.Abs(m) > 0.001 || math.Abs(sd-0.015) > 0.001 {
		t.Fatalf("ln F_step: mean %.5f, sd %.5f; want ≈ 0, ≈ 0.015", m, sd)
	}
}

// TestNoiseConfigDecode: the server.sim block's noise keys decode, and a
// negative or huge sigma is refused with its field and line.
func TestNoiseConfigDecode(t *testing.T) {
	cfg, err := DecodeConfig(strings.NewReader("noise:\n  run_sigma: 0.03\n  step_sigma: 0.015\n  seed: 3\n"), "n.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Noise != (NoiseConfig{RunSigma: 0.03, StepSigma: 0.015, Seed: 3}) || !cfg.Noise.On() {
		t.Fatalf("decoded %+v", cfg.Noise)
	}
	if DefaultConfig().Noise.On() {
		t.Fatal("the default config has noise on")
	}
	_, err = DecodeConfig(strings.NewReader("noise:\n  run_sigma: -0.1\n  step_sigma: 2\n"), "n.yaml")
	if err == nil || !strings.Contains(err.Error(), "noise.run_sigma (line 2)") || !strings.Contains(err.Error(), "noise.step_sigma (line 3)") {
		t.Fatalf("err = %v", err)
	}
}

// TestNoiseServer: a server with the model on gives every step the factor
// its hook reports, says its run factor in GET /v1/truth's header, and
// draws a new one at each profile reset; off, the factor is 1.
func TestNoiseServer(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Noise = NoiseConfig{RunSigma: 0.03, StepSigma: 0.015, Seed: 11}
	var recs []StepRecord
	s, err := New(cfg, WithStepHook(func(r StepRecord) { recs = append(recs, r) }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	first := s.NoiseRunFactor()
	if first == 1 || newNoise(cfg.Noise).run != first {
		t.Fatalf("run factor %v, want the seed's draw %v", first, newNoise(cfg.Noise).run)
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("POST", "/v1/completions", strings.NewReader(`{"prompt":[1,2,3,4],"max_tokens":3}`)))
	if rec.Code != 200 {
		t.Fatalf("completion: %d %s", rec.Code, rec.Body)
	}
	cm, _ := NewCostModel(cfg)
	for _, r := range recs {
		want := float64(cm.Step(r.Shape).Duration()) * r.NoiseFactor
		if r.NoiseFactor == 1 || math.Abs(float64(r.Cost.Duration())-want) > float64(numOps+2) {
			t.Fatalf("step %d: cost %v, factor %v, want %v ns", r.Index, r.Cost.Duration(), r.NoiseFactor, want)
		}
	}
	if len(recs) < 3 {
		t.Fatalf("%d steps for 3 tokens", len(recs))
	}
	tr := httptest.NewRecorder()
	s.Handler().ServeHTTP(tr, httptest.NewRequest("GET", TruthPath, nil))
	if got := tr.Header().Get(NoiseRunFactorHeader); got != strconv.FormatFloat(first, 'g', -1, 64) {
		t.Fatalf("%s: %q, want %v", NoiseRunFactorHeader, got, first)
	}
	s.ResetProfile()
	if s.NoiseRunFactor() == first {
		t.Fatal("the profile reset kept the run factor")
	}
	off, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer off.Close(context.Background())
	if off.NoiseRunFactor() != 1 {
		t.Fatalf("noise off: run factor %v", off.NoiseRunFactor())
	}
}

// TestNoisyServerMirrorsServer: a NoisyServer replays a real-time server's
// windows with the noise the server drew for them: after each profile reset
// the same F_run, and for a lone request (whose steps the host's timing
// cannot change) the same step factors, so the request's first and last
// token fall at the sums of the costs the server's steps recorded.
func TestNoisyServerMirrorsServer(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Noise = NoiseConfig{RunSigma: 0.03, StepSigma: 0.015, Seed: 23}
	var recs []StepRecord
	s, err := New(cfg, WithStepHook(func(r StepRecord) { recs = append(recs, r) }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	virtual := cfg.NewNoisyServer()
	for w, l := range []Lengths{{InputTokens: 4, OutputTokens: 3}, {InputTokens: 6, OutputTokens: 5}} {
		s.ResetProfile()
		recs = nil
		body := fmt.Sprintf(`{"prompt":%s,"max_tokens":%d}`, "["+strings.TrimSuffix(strings.Repeat("1,", l.InputTokens), ",")+"]", l.OutputTokens)
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest("POST", "/v1/completions", strings.NewReader(body)))
		if rec.Code != 200 {
			t.Fatalf("window %d: completion: %d %s", w, rec.Code, rec.Body)
		}
		ts, f, err := virtual.Window([]Arrival{{Lengths: l}})
		if err != nil {
			t.Fatal(err)
		}
		if real := s.NoiseRunFactor(); f != real || f == 1 {
			t.Fatalf("window %d: virtual run factor %v, the server's %v", w, f, real)
		}
		if len(recs) != l.OutputTokens {
			t.Fatalf("window %d: %d steps for %d tokens", w, len(recs), l.OutputTokens)
		}
		var sum time.Duration
		for _, r := range recs {
			sum += r.Cost.Duration()
		}
		if ts[0].FirstToken != recs[0].Cost.Duration() || ts[0].LastToken != sum {
			t.Fatalf("window %d: virtual first and last token at %v, %v; the server's steps cost %v, then %v in all", w, ts[0].FirstToken, ts[0].LastToken, recs[0].Cost.Duration(), sum)
		}
	}
}

// TestReplayIgnoresNoise: Replay and OpShares, the noiseless truth, give
// the same answer with the noise model on.
func TestReplayIgnoresNoise(t *testing.T) {
	arr := []Arrival{{At: 0, Lengths: Lengths{InputTokens: 500, OutputTokens: 20}}, {At: 5 * time.Millisecond, Lengths: Lengths{InputTokens: 300, OutputTokens: 40}}}
	quiet := DefaultConfig()
	noisy := quiet
	noisy.Noise = NoiseConfig{RunSigma: 0.5, StepSigma: 0.5, Seed: 1}
	a, err := quiet.Replay(arr)
	if err != nil {
		t.Fatal(err)
	}
	b, err := noisy.Replay(arr)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a, b) {
		t.Fatalf("Replay with noise %v, without %v", b, a)
	}
	sa, _ := quiet.OpShares(arr)
	sb, _ := noisy.OpShares(arr)
	if !maps.Equal(sa, sb) {
		t.Fatalf("OpShares with noise %v, without %v", sb, sa)
	}
}
