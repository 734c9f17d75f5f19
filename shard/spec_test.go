package shard

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/transferlab/transferlab/traces"
)

func TestParseSpec(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in      string
		want    Spec
		wantErr string
	}{
		{"0/3", Spec{0, 3}, ""},
		{"2/3", Spec{2, 3}, ""},
		{"0/1", Spec{0, 1}, ""},
		{"3/3", Spec{}, "want 0 ≤ i < N"},
		{"-1/3", Spec{}, "want 0 ≤ i < N"},
		{"1/0", Spec{}, "want 0 ≤ i < N"},
		{"1", Spec{}, "want i/N"},
		{"a/3", Spec{}, "whole numbers"},
	} {
		got, err := ParseSpec(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: error %v, want one containing %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

// TestSlicesPartitionTheSchedule: the shards' slices hold every request of
// the schedule once, with its id and offset, at 1/N of the rate.
func TestSlicesPartitionTheSchedule(t *testing.T) {
	t.Parallel()
	s, err := traces.Synthetic(traces.SyntheticSpec{Process: "poisson", RateRPS: 30, Duration: 20 * time.Second, Seed: 7, InputTokens: 10, OutputTokens: 5})
	if err != nil {
		t.Fatal(err)
	}
	const n = 3
	seen := map[int]time.Duration{}
	for i := range n {
		sl, err := Spec{i, n}.Slice(s)
		if err != nil {
			t.Fatal(err)
		}
		if r := sl.MeanRate(); r < 30.0/n*0.8 || r > 30.0/n*1.2 {
			t.Errorf("shard %d/%d: mean rate %.2f req/s, want about %.2f", i, n, r, 30.0/n)
		}
		for _, q := range sl.Requests {
			if _, dup := seen[q.ID]; dup {
				t.Fatalf("request %d in two shards", q.ID)
			}
			seen[q.ID] = q.Offset
		}
	}
	if len(seen) != len(s.Requests) {
		t.Fatalf("shards hold %d of %d requests", len(seen), len(s.Requests))
	}
	for _, q := range s.Requests {
		if seen[q.ID] != q.Offset {
			t.Fatalf("request %d: offset %s in its shard, %s in the schedule", q.ID, seen[q.ID], q.Offset)
		}
	}
	if _, err := (Spec{5, 9}).Slice(traces.First(s, 3)); err == nil {
		t.Error("a shard with no request was accepted")
	}
}

func TestTimetable(t *testing.T) {
	t.Parallel()
	start := time.Now().Add(30 * time.Millisecond)
	tt := &Timetable{StartAt: start, Gap: 20 * time.Millisecond}
	c0, err := tt.wait(context.Background(), 0, 50*time.Millisecond, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !c0.Planned.Equal(start) || c0.Began.Before(start) {
		t.Errorf("cell 0 planned %s began %s, want planned %s and not before", c0.Planned, c0.Began, start)
	}
	// Cell 1 is planned a span and a gap later, whatever cell 0 took.
	c1, err := tt.wait(context.Background(), 1, time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := start.Add(70 * time.Millisecond); !c1.Planned.Equal(want) {
		t.Errorf("cell 1 planned %s, want %s", c1.Planned, want)
	}
	// A shard that reaches a cell after its time starts at once and says how late.
	late := &Timetable{StartAt: time.Now().Add(-time.Second)}
	c, err := late.wait(context.Background(), 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if c.LateMs < 900 {
		t.Errorf("a cell reached 1 s after its time is %.1f ms late", c.LateMs)
	}
	if _, err := late.wait(context.Background(), 5, 0, 0); err == nil {
		t.Error("cells waited for out of order were accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	far := &Timetable{StartAt: time.Now().Add(time.Hour)}
	if _, err := far.wait(ctx, 0, 0, 0); err == nil {
		t.Error("a cancelled wait returned no error")
	}
}
