package traces

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

func TestComputeStatsByHand(t *testing.T) {
	t.Parallel()
	// Offsets 0, 0.5, 1, 1, 3 s. Gaps 0.5, 0.5, 0, 2: mean 0.75, population
	// σ = √(2.25/4) = 0.75, so CV = 1. One-second bins [0,1) [1,2) [2,3) [3,4)
	// hold 2, 2, 0, 1: mean 1.25, population variance 0.6875, dispersion 0.55.
	s := Schedule{Source: "hand", Format: "test"}
	for i, ms := range []int{0, 500, 1000, 1000, 3000} {
		s.Requests = append(s.Requests, Request{ID: i, Offset: time.Duration(ms) * time.Millisecond, InputTokens: 10 * (i + 1), OutputTokens: 5 - i})
	}
	st := ComputeStats(s)
	if st.Rows != 5 || st.DurationS != 3 || st.MeanRateRPS != 4.0/3 || st.DuplicateOffsetRows != 1 || st.MaxArrivalsPerSecond != 2 {
		t.Errorf("stats %+v", st)
	}
	if st.InterArrivalCV == nil || math.Abs(*st.InterArrivalCV-1) > 1e-12 {
		t.Errorf("CV %v, want 1", st.InterArrivalCV)
	}
	if st.DispersionIndex1s == nil || math.Abs(*st.DispersionIndex1s-0.55) > 1e-12 {
		t.Errorf("dispersion %v, want 0.55", st.DispersionIndex1s)
	}
	// Nearest rank on 10, 20, 30, 40, 50: p50 rank 3, p90 rank 5, p99 rank 5.
	if want := (TokenStats{MinTokens: 10, P50Tokens: 30, P90Tokens: 50, P99Tokens: 50, MaxTokens: 50, MeanTokens: 30}); st.Input != want {
		t.Errorf("input %+v, want %+v", st.Input, want)
	}
	wantHist := []HistogramBin{{0, 0, 1}, {1, 1, 1}, {2, 2, 2}}
	if len(st.ArrivalsPerSecond) != len(wantHist) {
		t.Fatalf("histogram %+v", st.ArrivalsPerSecond)
	}
	for i, b := range wantHist {
		if st.ArrivalsPerSecond[i] != b {
			t.Errorf("bin %d = %+v, want %+v", i, st.ArrivalsPerSecond[i], b)
		}
	}
}

func TestTokenPercentilesNearestRank(t *testing.T) {
	t.Parallel()
	v := make([]int, 100)
	for i := range v {
		v[i] = 100 - i // 100..1, unsorted on purpose
	}
	if got, want := tokenStats(v), (TokenStats{MinTokens: 1, P50Tokens: 50, P90Tokens: 90, P99Tokens: 99, MaxTokens: 100, MeanTokens: 50.5}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if got := tokenStats([]int{7}); got.P50Tokens != 7 || got.P99Tokens != 7 {
		t.Errorf("single value %+v", got)
	}
}

func TestComputeStatsEdgeCases(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		ms     []int
		cvNil  bool
		dispOK bool
	}{
		{"empty", nil, true, false},
		{"one request", []int{0}, true, true},
		{"all at once", []int{0, 0, 0}, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := ComputeStats(sched(tc.ms...))
			if (st.InterArrivalCV == nil) != tc.cvNil || (st.DispersionIndex1s != nil) != tc.dispOK {
				t.Errorf("CV %v dispersion %v", st.InterArrivalCV, st.DispersionIndex1s)
			}
			if _, err := json.Marshal(st); err != nil {
				t.Errorf("JSON: %v", err)
			}
			var buf bytes.Buffer
			if err := st.WriteText(&buf); err != nil || !strings.Contains(buf.String(), "rows") {
				t.Errorf("text %q, %v", buf.String(), err)
			}
		})
	}
}

func TestStatsTextAndJSON(t *testing.T) {
	t.Parallel()
	s := readFixture(t, "mooncake_conv_50.jsonl", ReadOptions{})
	st := ComputeStats(s)
	var buf bytes.Buffer
	if err := st.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"format", "mooncake", "mean rate", "req/s", "inter-arrival CV", "index of dispersion", "p99", "arrivals per second", "#"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, buf.String())
		}
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"duration_s"`, `"mean_rate_rps"`, `"interarrival_cv"`, `"dispersion_index_1s"`, `"p99_tokens"`, `"arrivals_per_second_histogram"`, `"sha256"`} {
		if !bytes.Contains(b, []byte(key)) {
			t.Errorf("JSON lacks %s", key)
		}
	}
	// Every 1 s bin is counted once: the histogram's seconds cover floor(duration)+1 bins.
	total := 0
	for _, b := range st.ArrivalsPerSecond {
		total += b.Seconds
	}
	if want := int(st.DurationS) + 1; total != want {
		t.Errorf("histogram covers %d seconds, want %d", total, want)
	}
}

func TestComputeStatsSparseSpan(t *testing.T) {
	t.Parallel()
	// Two requests four years apart (a fuzz finding): the per-second bins are
	// counted without allocating one slot per second.
	span := 4 * 365 * 24 * time.Hour
	s := Schedule{Requests: []Request{{Offset: 0, InputTokens: 1, OutputTokens: 1}, {ID: 1, Offset: span, InputTokens: 1, OutputTokens: 1}}}
	st := ComputeStats(s)
	bins := int(span/time.Second) + 1
	if st.ArrivalsPerSecond[0].Seconds != bins-2 || st.ArrivalsPerSecond[1].Seconds != 2 {
		t.Errorf("histogram %+v, want %d empty seconds and 2 with one arrival", st.ArrivalsPerSecond, bins-2)
	}
	// counts: two 1s, the rest 0: mean m = 2/bins, variance 2/bins − m², dispersion 1 − m.
	m := 2 / float64(bins)
	if got := *st.DispersionIndex1s; math.Abs(got-(1-m)) > 1e-9 {
		t.Errorf("dispersion %g, want %g", got, 1-m)
	}
}
