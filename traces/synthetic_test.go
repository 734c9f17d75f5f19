package traces

import (
	"math"
	"strings"
	"testing"
	"time"
)

// within reports whether got is within rel (relative) of want. It is this
// package's one tolerance helper; each use states why its tolerance holds.
func within(got, want, rel float64) bool { return math.Abs(got-want) <= rel*math.Abs(want) }

func TestSyntheticConstant(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		spec SyntheticSpec
		want []time.Duration
	}{
		{"n", SyntheticSpec{Process: ProcessConstant, RateRPS: 4, N: 5, InputTokens: 7, OutputTokens: 3},
			[]time.Duration{0, 250 * time.Millisecond, 500 * time.Millisecond, 750 * time.Millisecond, time.Second}},
		{"duration excludes its end", SyntheticSpec{Process: ProcessConstant, RateRPS: 2, Duration: 2 * time.Second, InputTokens: 7, OutputTokens: 3},
			[]time.Duration{0, 500 * time.Millisecond, time.Second, 1500 * time.Millisecond}},
		{"n before duration", SyntheticSpec{Process: ProcessConstant, RateRPS: 2, N: 2, Duration: time.Hour, InputTokens: 7, OutputTokens: 3},
			[]time.Duration{0, 500 * time.Millisecond}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := Synthetic(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, s)
			equalDurations(t, offsets(s), tc.want)
			if s.Requests[0].InputTokens != 7 || s.Requests[0].OutputTokens != 3 || s.Requests[0].SourceLine != 0 {
				t.Errorf("request %+v", s.Requests[0])
			}
		})
	}
}

func TestSyntheticProcesses(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("draws 100k gaps per case")
	}
	// Tolerances: for n gaps the sample mean's relative standard error is
	// CV/√n and the sample CV's is about CV·√((κ−1)/(4n)) (κ the gaps'
	// kurtosis: 9 for exponential, 3+6·CV² for gamma). With n = 100000 these
	// are ≤ 1 % (mean) and ≤ 2.7 % (CV at CV 3); the tolerances below are
	// ≥ 4 standard errors, and the draws are seeded, so the test is deterministic.
	tests := []struct {
		name    string
		spec    SyntheticSpec
		cv      float64
		rateTol float64
		cvTol   float64
	}{
		{"poisson", SyntheticSpec{Process: ProcessPoisson, RateRPS: 5, N: 100_000, Seed: 1}, 1, 0.02, 0.04},
		{"gamma cv 3", SyntheticSpec{Process: ProcessGamma, RateRPS: 5, CV: 3, N: 100_000, Seed: 2}, 3, 0.05, 0.12},
		{"gamma cv 0.5", SyntheticSpec{Process: ProcessGamma, RateRPS: 20, CV: 0.5, N: 100_000, Seed: 3}, 0.5, 0.01, 0.03},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.spec.InputTokens, tc.spec.OutputTokens = 10, 10
			s, err := Synthetic(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, s)
			st := ComputeStats(s)
			if !within(st.MeanRateRPS, tc.spec.RateRPS, tc.rateTol) {
				t.Errorf("mean rate %.4g, want %g ± %g%%", st.MeanRateRPS, tc.spec.RateRPS, 100*tc.rateTol)
			}
			if st.InterArrivalCV == nil || !within(*st.InterArrivalCV, tc.cv, tc.cvTol) {
				t.Errorf("CV %v, want %g ± %g%%", st.InterArrivalCV, tc.cv, 100*tc.cvTol)
			}
			if !strings.Contains(s.Source, "seed=") || !strings.Contains(s.Source, tc.spec.Process) {
				t.Errorf("Source %q does not record process and seed", s.Source)
			}
		})
	}
}

func TestSyntheticSeedAndLengths(t *testing.T) {
	t.Parallel()
	src := readFixture(t, "azure_conv_50.csv", ReadOptions{})
	pairs := map[[2]int]bool{}
	for _, r := range src.Requests {
		pairs[[2]int{r.InputTokens, r.OutputTokens}] = true
	}
	spec := SyntheticSpec{Process: ProcessPoisson, RateRPS: 3, Duration: time.Minute, Seed: 42, Lengths: &src}
	a, err := Synthetic(spec)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Synthetic(spec)
	spec.Seed = 43
	c, _ := Synthetic(spec)
	if len(a.Requests) != len(b.Requests) {
		t.Fatal("same seed, different length")
	}
	for i := range a.Requests {
		if a.Requests[i] != b.Requests[i] {
			t.Fatalf("same seed differs at %d", i)
		}
		if !pairs[[2]int{a.Requests[i].InputTokens, a.Requests[i].OutputTokens}] {
			t.Fatalf("request %d has lengths %d/%d not in the source trace", i, a.Requests[i].InputTokens, a.Requests[i].OutputTokens)
		}
		if a.Requests[i].Offset >= time.Minute {
			t.Fatalf("offset %v beyond the duration", a.Requests[i].Offset)
		}
	}
	if len(c.Requests) == len(a.Requests) && c.Requests[1] == a.Requests[1] {
		t.Error("different seeds gave the same schedule")
	}
	if !strings.Contains(a.Source, "seed=42") || !strings.Contains(a.Source, src.SHA256[:12]) {
		t.Errorf("Source %q lacks seed or lengths' hash", a.Source)
	}
	spec.OutputTokens = 5
	d, _ := Synthetic(spec)
	for _, r := range d.Requests {
		if r.OutputTokens != 5 {
			t.Fatalf("fixed output not applied: %+v", r)
		}
	}
}

func TestSyntheticErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		spec SyntheticSpec
		want []string // every problem is reported at once
	}{
		{"zero value", SyntheticSpec{}, []string{"rate", "set n or duration", "token lengths", "process"}},
		{"gamma without cv", SyntheticSpec{Process: ProcessGamma, RateRPS: 1, N: 3, InputTokens: 1, OutputTokens: 1}, []string{"cv"}},
		{"negative n", SyntheticSpec{Process: ProcessPoisson, RateRPS: 1, N: -1, InputTokens: 1, OutputTokens: 1}, []string{"≥ 0"}},
		{"too many", SyntheticSpec{Process: ProcessConstant, RateRPS: 1e6, Duration: 1000 * time.Hour, InputTokens: 1, OutputTokens: 1}, []string{"limit"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Synthetic(tc.spec)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
