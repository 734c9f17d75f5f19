package loadgen

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/transferlab/transferlab/loadgen/loadgentest"
)

// TestDeadlineLeavesRecordsOnDisk: a whole-run deadline ends the run; every
// scheduled request is on disk in exactly one state and the summary says
// the run is incomplete.
func TestDeadlineLeavesRecordsOnDisk(t *testing.T) {
	t.Parallel()
	srv := startFast(t, loadgentest.Config{TTFT: 50 * time.Millisecond, ITL: 20 * time.Millisecond})
	path := filepath.Join(t.TempDir(), "records.jsonl")
	sink, err := CreateJSONL(path)
	if err != nil {
		t.Fatal(err)
	}
	s := schedule(40, 20*time.Millisecond, 8, 20)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	sum, err := Replay(ctx, srv, s, nil, sink)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Complete || sum.IncompleteReason == "" {
		t.Errorf("complete %t reason %q after the deadline", sum.Complete, sum.IncompleteReason)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := ReadRecords(f)
	if err != nil {
		t.Fatal(err)
	}
	checkOneStateEach(t, s, recs, sum)
	if sum.States[StateNotSent] == 0 || sum.States[StateCancelled] == 0 {
		t.Errorf("states %v: want some cancelled in flight and some never sent", sum.States)
	}
}

// TestNullServerPacing: open-loop sends against a server that answers at
// once keep the offered rate, with no lumps and no start-up burst.
// Dispatch times are what the client controls. It is a timing
// target, so it runs only when asked (TRANSFERLAB_TIMING_TESTS=1, no -race,
// an unloaded machine); bench-client checks 2,000 req/s for the README.
func TestNullServerPacing(t *testing.T) {
	if os.Getenv("TRANSFERLAB_TIMING_TESTS") != "1" || raceDetector {
		t.Skip("timing target: set TRANSFERLAB_TIMING_TESTS=1 on an unloaded machine, without -race")
	}
	srv := startFast(t, loadgentest.Config{})
	const rate, n = 1000, 2000
	s := schedule(n, time.Second/rate, 8, 1)
	var sink SliceSink
	sum, err := Replay(context.Background(), srv, s, nil, &sink, WithStream(false))
	if err != nil {
		t.Fatal(err)
	}
	if sum.States[StateOK] != n {
		t.Fatalf("states %v", sum.States)
	}
	lo, hi := sink.Records[0].DispatchedAt, sink.Records[0].DispatchedAt
	for _, r := range sink.Records {
		lo, hi = min(lo, r.DispatchedAt), max(hi, r.DispatchedAt)
	}
	got := float64(n-1) / (hi - lo).Seconds()
	if rel := got/rate - 1; rel > 0.01 || rel < -0.01 {
		t.Errorf("dispatch rate %.1f req/s, want %d ± 1 %%", got, rate)
	}
	bins := make([]int, int((hi-lo)/(10*time.Millisecond))+1)
	for _, r := range sink.Records {
		bins[int((r.DispatchedAt-lo)/(10*time.Millisecond))]++
	}
	// 10 per bin expected; a bin may hold a few more after a late wake-up
	// (the client catches up at once, as open loop must), never a burst.
	for i, c := range bins {
		if c > 25 {
			t.Errorf("bin %d (%d ms) holds %d dispatches, expected 10", i, i*10, c)
		}
	}
	if bins[0] > 15 {
		t.Errorf("start-up burst: %d dispatches in the first 10 ms", bins[0])
	}
	t.Logf("dispatch rate %.1f req/s, lag p99 %v, dispatch lag p99 %v", got, sum.ScheduleLagP99, sum.DispatchLagP99)
}
