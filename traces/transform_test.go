package traces

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// sched builds a schedule from offsets in ms and (in, out) = (i+1, i+1).
func sched(ms ...int) Schedule {
	s := Schedule{Source: "test", Format: "test", SkippedByReason: map[string]int{"x": 1}}
	for i, m := range ms {
		s.Requests = append(s.Requests, Request{ID: i, Offset: time.Duration(m) * time.Millisecond, InputTokens: i + 1, OutputTokens: i + 1, SourceLine: i + 2})
	}
	return s
}

// checkDerived asserts a transform's result is renumbered, keeps source
// lines, records the step, and does not share maps with its input.
func checkDerived(t *testing.T, in, out Schedule) {
	t.Helper()
	lines := map[int]bool{}
	for _, r := range in.Requests {
		lines[r.SourceLine] = true
	}
	for i, r := range out.Requests {
		if r.ID != i {
			t.Fatalf("request %d has ID %d", i, r.ID)
		}
		if !lines[r.SourceLine] {
			t.Fatalf("request %d has SourceLine %d, not one of the input's", i, r.SourceLine)
		}
	}
	if len(out.Transforms) != len(in.Transforms)+1 {
		t.Errorf("Transforms %v after %v", out.Transforms, in.Transforms)
	}
	if out.SkippedByReason != nil {
		out.SkippedByReason["x"] = 99
		if in.SkippedByReason["x"] == 99 {
			t.Error("SkippedByReason map shared with the input")
		}
	}
}

func TestScaleToRate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   Schedule
		rate float64
	}{
		{"bursty", sched(0, 0, 0, 1000, 1000, 5000), 10},
		{"slow down", sched(0, 10, 20, 30), 0.5},
		{"azure fixture", readFixture(t, "azure_conv_50.csv", ReadOptions{}), 4},
		{"mooncake bursts", readFixture(t, "mooncake_conv_50.jsonl", ReadOptions{}), 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, err := ScaleToRate(tc.in, tc.rate)
			if err != nil {
				t.Fatal(err)
			}
			checkDerived(t, tc.in, out)
			// Each offset is rounded to 1 ns, so the span is exact to ±1 ns:
			// relative error ≤ 1 ns / span.
			if got := out.MeanRate(); math.Abs(got-tc.rate)/tc.rate > 1e-9*float64(len(out.Requests)) {
				t.Errorf("MeanRate %.12g, want %g", got, tc.rate)
			}
			// Burst shape: every gap scales by one factor (ratios of offsets kept).
			f := float64(out.Duration()) / float64(tc.in.Duration())
			for i, r := range out.Requests {
				want := float64(tc.in.Requests[i].Offset) * f
				if math.Abs(float64(r.Offset)-want) > 1 {
					t.Fatalf("offset %d = %d, want %.0f", i, r.Offset, want)
				}
				if (i > 0 && r.Offset == out.Requests[i-1].Offset) != (i > 0 && tc.in.Requests[i].Offset == tc.in.Requests[i-1].Offset) {
					t.Fatalf("duplicate-timestamp pattern changed at %d", i)
				}
			}
		})
	}
	for _, bad := range []struct {
		name string
		in   Schedule
		rate float64
	}{{"zero rate", sched(0, 1000), 0}, {"NaN", sched(0, 1000), math.NaN()}, {"Inf", sched(0, 1000), math.Inf(1)}, {"one request", sched(0), 1}, {"all at once", sched(5, 5, 5), 1}} {
		t.Run(bad.name, func(t *testing.T) {
			t.Parallel()
			if _, err := ScaleToRate(bad.in, bad.rate); err == nil {
				t.Error("no error")
			}
		})
	}
}

func TestFirstShard(t *testing.T) {
	t.Parallel()
	in := sched(0, 100, 200, 300, 400, 500, 600)
	t.Run("first", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct{ n, want int }{{3, 3}, {0, 0}, {-1, 0}, {99, 7}} {
			out := First(in, tc.n)
			checkDerived(t, in, out)
			if len(out.Requests) != tc.want {
				t.Errorf("First(%d) has %d", tc.n, len(out.Requests))
			}
		}
	})
	t.Run("shard", func(t *testing.T) {
		t.Parallel()
		seen := map[int]int{}
		for i := range 3 {
			out, err := Shard(in, i, 3)
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Transforms) != len(in.Transforms)+1 {
				t.Errorf("Transforms %v after %v", out.Transforms, in.Transforms)
			}
			for k, r := range out.Requests {
				if want := in.Requests[i+3*k].ID; r.ID != want {
					t.Fatalf("shard %d request %d has id %d, want the unsplit id %d", i, k, r.ID, want)
				}
				seen[r.SourceLine]++
				if orig := in.Requests[r.InputTokens-1]; orig.Offset != r.Offset {
					t.Fatal("shard moved an offset")
				}
			}
		}
		if len(seen) != 7 {
			t.Errorf("shards cover %d of 7 requests", len(seen))
		}
		for line, n := range seen {
			if n != 1 {
				t.Errorf("line %d in %d shards", line, n)
			}
		}
		for _, bad := range [][2]int{{3, 3}, {-1, 3}, {0, 0}} {
			if _, err := Shard(in, bad[0], bad[1]); err == nil {
				t.Errorf("Shard(%d, %d) accepted", bad[0], bad[1])
			}
		}
	})
}

func TestClampContext(t *testing.T) {
	t.Parallel()
	in := Schedule{Requests: []Request{
		{InputTokens: 100, OutputTokens: 10, SourceLine: 101}, // fits
		{InputTokens: 120, OutputTokens: 10, SourceLine: 121}, // input cut to 118
		{InputTokens: 5, OutputTokens: 500, SourceLine: 6},    // output alone too long: 1 + 127
		{InputTokens: 118, OutputTokens: 10, SourceLine: 119}, // exactly the limit
	}}
	out := ClampContext(in, 128)
	checkDerived(t, in, out)
	want := [][2]int{{100, 10}, {118, 10}, {1, 127}, {118, 10}}
	for i, r := range out.Requests {
		if r.InputTokens != want[i][0] || r.OutputTokens != want[i][1] {
			t.Errorf("request %d = %d/%d, want %v", i, r.InputTokens, r.OutputTokens, want[i])
		}
	}
	if out.Clamped != 2 || in.Requests[1].InputTokens != 120 {
		t.Errorf("Clamped %d (want 2); input mutated: %v", out.Clamped, in.Requests[1].InputTokens != 120)
	}
	// Mooncake synthetic rows above 128k fit a 32k server after clamping.
	mc := ClampContext(readFixture(t, "mooncake_synth_rows240-259.jsonl", ReadOptions{}), 32768)
	for _, r := range mc.Requests {
		if r.InputTokens+r.OutputTokens > 32768 {
			t.Fatalf("%+v exceeds the limit", r)
		}
	}
	if mc.Clamped == 0 {
		t.Error("no Mooncake row clamped")
	}
}

// TestTrim: first n, then the clamp, each left out at 0; both counted as
// First and ClampContext count them.
func TestTrim(t *testing.T) {
	t.Parallel()
	in := Schedule{Requests: []Request{
		{InputTokens: 100, OutputTokens: 10},
		{InputTokens: 120, OutputTokens: 10},
		{InputTokens: 500, OutputTokens: 10},
	}}
	if out, err := Trim(in, 0, 0); err != nil || len(out.Requests) != 3 || out.Clamped != 0 || len(out.Dropped) != 0 {
		t.Errorf("Trim(0, 0) changed the schedule: %+v, %v", out, err)
	}
	if out, err := Trim(in, 3, 0); err != nil || len(out.Requests) != 3 {
		t.Errorf("Trim(3, 0) = %d requests, %v: want every row", len(out.Requests), err)
	}
	// More rows asked than the trace has: refused, not every row kept.
	var fe *FirstError
	if out, err := Trim(in, 4, 0); !errors.As(err, &fe) || fe.Asked != 4 || fe.Rows != 3 || !strings.Contains(err.Error(), "4 rows asked, but the trace has 3") {
		t.Errorf("Trim(4, 0) = %d requests, %v: want a refusal naming 4 rows asked of 3", len(out.Requests), err)
	}
	out, err := Trim(in, 2, 64)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Requests) != 2 || out.Dropped[DroppedFirst] != 1 || out.Clamped != 2 {
		t.Errorf("Trim(2, 64): %d requests, dropped %v, clamped %d; want 2, first_n 1, 2", len(out.Requests), out.Dropped, out.Clamped)
	}
	if r := out.Requests[1]; r.InputTokens+r.OutputTokens != 64 {
		t.Errorf("request 1 not clamped to 64: %+v", r)
	}
}
