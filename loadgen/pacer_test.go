package loadgen

import (
	"math"
	"testing"
	"testing/quick"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

func TestTracePacer(t *testing.T) {
	t.Parallel()
	s := schedule(4, 10*time.Millisecond, 1, 1)
	p := NewTracePacer(s)
	cases := []struct {
		name    string
		elapsed time.Duration
		hits    uint64
		wait    time.Duration
		stop    bool
	}{
		{"first request at its offset", 0, 0, 0, false},
		{"waits until the offset", 5 * time.Millisecond, 1, 5 * time.Millisecond, false},
		{"late: negative wait keeps the intended time", 35 * time.Millisecond, 2, -15 * time.Millisecond, false},
		{"stops after the last request", time.Second, 4, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, st := p.Pace(tc.elapsed, tc.hits)
			if w != tc.wait || st != tc.stop {
				t.Errorf("Pace(%v, %d) = %v, %t; want %v, %t", tc.elapsed, tc.hits, w, st, tc.wait, tc.stop)
			}
		})
	}
	if r := p.Rate(15 * time.Millisecond); r != 4 {
		t.Errorf("Rate = %g req/s in the 1 s window, want 4", r)
	}
}

// renewalStats draws n gaps through Pace and returns their mean and CV.
func renewalStats(p Pacer, n int) (mean, cv float64) {
	var prev time.Duration
	var sum, sum2 float64
	for i := 0; i < n; i++ {
		w, _ := p.Pace(0, uint64(i))
		g := (w - prev).Seconds()
		prev = w
		sum += g
		sum2 += g * g
	}
	mean = sum / float64(n)
	sd := math.Sqrt(sum2/float64(n) - mean*mean)
	return mean, sd / mean
}

func TestRenewalPacers(t *testing.T) {
	t.Parallel()
	const n = 200000
	mk := func(p Pacer, err error) Pacer {
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name string
		p    Pacer
		rate float64
		cv   float64
	}{
		{"poisson 50 req/s", mk(NewPoissonPacer(50, 1)), 50, 1},
		{"gamma cv 1 (Poisson)", mk(NewGammaPacer(20, 1, 2)), 20, 1},
		{"gamma cv 2 (bursty, shape 0.25)", mk(NewGammaPacer(20, 2, 3)), 20, 2},
		{"gamma cv 0.5 (smooth)", mk(NewGammaPacer(1000, 0.5, 4)), 1000, 0.5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mean, cv := renewalStats(tc.p, n)
			// Standard error of the mean gap is cv/(rate·√n) ≈ 0.45 % at cv 2;
			// 2 % is > 4 standard errors. The sample CV converges more slowly
			// for heavy-tailed shapes; 5 % is a loose bound.
			if rel := math.Abs(mean*tc.rate - 1); rel > 0.02 {
				t.Errorf("mean gap %.6g s, want %.6g (rel err %.3g)", mean, 1/tc.rate, rel)
			}
			if rel := math.Abs(cv/tc.cv - 1); rel > 0.05 {
				t.Errorf("cv %.4g, want %.4g", cv, tc.cv)
			}
			if tc.p.Rate(0) != tc.rate {
				t.Errorf("Rate = %g", tc.p.Rate(0))
			}
		})
	}
	if _, err := NewPoissonPacer(0, 1); err == nil {
		t.Error("rate 0 accepted")
	}
	if _, err := NewGammaPacer(1, -1, 1); err == nil {
		t.Error("cv −1 accepted")
	}
}

// Property: renewal pacers never schedule backwards, and a hit's due time does
// not depend on when or how often it was asked for (redraws are seeded).
func TestRenewalPacerProperties(t *testing.T) {
	t.Parallel()
	f := func(seed uint64, asks []uint16) bool {
		p, _ := NewGammaPacer(100, 1.5, seed)
		ref, _ := NewGammaPacer(100, 1.5, seed)
		var last time.Duration
		for i := uint64(0); i < 300; i++ {
			w, _ := ref.Pace(0, i)
			if w < last {
				return false
			}
			last = w
		}
		for _, a := range asks {
			h := uint64(a % 300)
			w1, _ := p.Pace(0, h)
			w2, _ := ref.Pace(0, h)
			if w1 != w2 {
				return false
			}
		}
		return true
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 200}); err != nil {
		t.Error(err)
	}
}

// vegeta's own pacers satisfy Pacer unchanged.
var _ Pacer = vegeta.ConstantPacer{}
