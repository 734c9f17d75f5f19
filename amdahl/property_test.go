package amdahl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// randomProfile is a profile of n kernels on up to 4 streams with random
// overlap; about a third are target.
func randomProfile(r *rand.Rand, n int) *Profile {
	p := &Profile{Source: "random"}
	for range n {
		s := time.Duration(r.IntN(10000))
		k := Kernel{Stream: int64(r.IntN(4)), Start: s, End: s + time.Duration(1+r.IntN(300)), Target: r.IntN(3) == 0}
		p.Kernels = append(p.Kernels, k)
		if len(p.Kernels) == 1 {
			p.Span = k.interval()
		}
		p.Span.Start, p.Span.End = min(p.Span.Start, k.Start), max(p.Span.End, k.End)
	}
	return p
}

// TestFractionsProperties: on any timeline, target ≤ busy ≤ Σ durations,
// busy ≥ the busiest stream's own union, and 0 ≤ f_excl ≤ f_wall ≤ f_gpu ≤ 1
// when the whole span is active (f_wall ≤ f_gpu because busy ≤ span).
func TestFractionsProperties(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 500 {
		p := randomProfile(r, 1+r.IntN(60))
		fr, err := p.Fractions()
		if err != nil {
			t.Fatal(err)
		}
		var sum time.Duration
		perStream := map[int64][]Interval{}
		for _, k := range p.Kernels {
			sum += k.End - k.Start
			perStream[k.Stream] = append(perStream[k.Stream], k.interval())
		}
		for s, ivs := range perStream {
			if UnionLength(ivs) > fr.Busy {
				t.Fatalf("case %d: stream %d alone is busy %v > total busy %v", i, s, UnionLength(ivs), fr.Busy)
			}
		}
		if fr.TargetGPU > fr.Busy || fr.Busy > sum || fr.Busy > p.Span.Len() {
			t.Fatalf("case %d: target %v busy %v sum %v span %v", i, fr.TargetGPU, fr.Busy, sum, p.Span.Len())
		}
		const eps = 1e-12
		if fr.FExcl < 0 || fr.FExcl > fr.FWall+eps || fr.FWall > fr.FGPU+eps || fr.FGPU > 1+eps {
			t.Fatalf("case %d: f_excl %v f_wall %v f_gpu %v", i, fr.FExcl, fr.FWall, fr.FGPU)
		}
	}
}

// chromeTrace renders a synthetic Chrome trace of n kernels with a target
// range and a launch event around every third one.
func chromeTrace(n int) []byte {
	type ev map[string]any
	evs := make([]ev, 0, 3*n)
	for i := range n {
		ts := float64(i) * 3.5
		if i%3 == 0 {
			evs = append(evs, ev{"ph": "X", "cat": "user_annotation", "name": DefaultTargetAnnotation, "pid": 1, "tid": 1, "ts": ts, "dur": 1.0})
		}
		evs = append(evs,
			ev{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": ts + 0.1, "dur": 0.5, "args": ev{"correlation": i}},
			ev{"ph": "X", "cat": "kernel", "name": fmt.Sprintf("k%d", i%7), "pid": 0, "tid": 7, "ts": ts + 2, "dur": 3.0,
				"args": ev{"device": 0, "stream": 7 + i%2, "correlation": i}})
	}
	b, _ := json.Marshal(map[string]any{"traceEvents": evs})
	return b
}

func TestChromeSyntheticLarge(t *testing.T) {
	t.Parallel()
	p, err := ParseChrome(bytes.NewReader(chromeTrace(3000)), "synthetic")
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Attribution.ByCorrelation; got != 1000 {
		t.Fatalf("%d kernels attributed, want every third of 3000 = 1000", got)
	}
}

// BenchmarkParseChrome measures reading a 30k-kernel trace (≈ 10 MB), the
// size of a few seconds of a busy server's profile.
func BenchmarkParseChrome(b *testing.B) {
	data := chromeTrace(30000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		p, err := ParseChrome(bytes.NewReader(data), "bench")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.Fractions(); err != nil {
			b.Fatal(err)
		}
	}
}

func TestUsToDur(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{"1764400000123456.789", 1764400000123456789, false}, // epoch µs: exact to the ns
		{"5.0004", 5000, false},
		{"5.0005", 5001, false},
		{"12", 12000, false},
		{"0.5", 500, false},
		{"1e3", 1000000, false},
		{"-2.5", -2500, false},
		{"abc", 0, true},
		{"1.2x", 0, true},
		{"99999999999999999999", 0, true},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := usToDur(json.Number(c.in))
			if (err != nil) != c.wantErr || (!c.wantErr && got != c.want) {
				t.Fatalf("usToDur(%s) = %d, %v; want %d (error %v)", c.in, got, err, c.want, c.wantErr)
			}
		})
	}
}
