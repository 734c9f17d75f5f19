package clientbench

import (
	"context"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/transferlab/transferlab/loadgen"
)

// TestServeSimChild: the simulator child (bench-client --serve-sim, here
// this test binary through TestMain) prints only its URL, serves the API and
// the truth export, and exits cleanly when its stdin closes; a
// --server-cpus it cannot apply fails with the flag named.
func TestServeSimChild(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := startChild(context.Background(), exe, []string{Command, "--serve-sim", "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(srv.url, "http://127.0.0.1:") {
		t.Errorf("first line %q, want the base URL alone", srv.url)
	}
	truth, err := fetchTruth(context.Background(), srv.url)
	if err != nil || len(truth) != 0 {
		t.Errorf("truth export of a fresh simulator: %v, %v; want empty", truth, err)
	}
	var cerr error
	closeServer(srv, &cerr)
	if cerr != nil {
		t.Errorf("child told to stop: %v, want a clean exit", cerr)
	}
	if runtime.GOOS != "linux" {
		return
	}
	t.Run("bad --server-cpus", func(t *testing.T) {
		t.Parallel()
		_, err := startChild(context.Background(), exe, []string{Command, "--serve-sim", "127.0.0.1:0", "--server-cpus", "1000"})
		if err == nil || !strings.Contains(err.Error(), "--server-cpus 1000") {
			t.Fatalf("err = %v, want the child's error naming --server-cpus 1000", err)
		}
	})
}

// TestSweepSimConfig: the sweep's simulator config is the default one with
// the raised batch limits and every op --sim-speedup × faster; a --sim-config
// file replaces the limits, and a missing one is an error naming the flag.
func TestSweepSimConfig(t *testing.T) {
	t.Parallel()
	cfg, err := sweepSimConfig(Options{simSpeedup: 16})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Scheduler.MaxNumSeqs != 8192 || cfg.TruthCapacity != 65536 || len(cfg.Overrides) == 0 {
		t.Errorf("config %+v: want raised limits and overrides", cfg.Scheduler)
	}
	for op, f := range cfg.Overrides {
		if f != 16 {
			t.Errorf("override %s = %g, want 16", op, f)
		}
	}
	if cfg, err := sweepSimConfig(Options{simSpeedup: 1}); err != nil || len(cfg.Overrides) != 0 {
		t.Errorf("speed-up 1: overrides %v, err %v; want none", cfg.Overrides, err)
	}
	path := t.TempDir() + "/sim.yaml"
	if err := os.WriteFile(path, []byte("scheduler:\n  max_num_seqs: 7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if cfg, err := sweepSimConfig(Options{simSpeedup: 1, simConfig: path}); err != nil || cfg.Scheduler.MaxNumSeqs != 7 {
		t.Errorf("--sim-config: max_num_seqs %d, err %v; want the file's 7", cfg.Scheduler.MaxNumSeqs, err)
	}
	if _, err := sweepSimConfig(Options{simSpeedup: 1, simConfig: path + ".missing"}); err == nil || !strings.Contains(err.Error(), "--sim-config") {
		t.Errorf("missing --sim-config: err %v, want the flag named", err)
	}
}

// The head-of-line split: a gap overlapping a long line's time on the wire
// (its stream's first token event to the one after the line: its second
// for a comment, its third for a data line; to the end, or the final time
// when it failed, with fewer events) counts as during, any other as apart;
// streams without events open no window.
func TestLongWindowsOverlap(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	ev := func(at ...int) []loadgen.TokenEvent {
		var es []loadgen.TokenEvent
		for _, a := range at {
			es = append(es, loadgen.TokenEvent{At: ms(a)})
		}
		return es
	}
	recs := []loadgen.Record{
		{RequestID: 20, Events: ev(100, 400, 420), EndAt: ms(430)}, // long, [100, 400]
		{RequestID: 1, Events: ev(0, 20)},                          // not long
		{RequestID: 10, Events: ev(50), FinalAt: ms(60)},           // long, failed: [50, 60]
		{RequestID: 30}, // long, no events: no window
	}
	ws := longWindows(recs, 10, 1)
	want := []window{{ms(50), ms(60)}, {ms(100), ms(400)}}
	if !slices.Equal(ws, want) {
		t.Fatalf("windows %v, want %v", ws, want)
	}
	// A data line is event 1 itself: its window ends at event 2.
	if got, want := longWindows(recs, 10, 2), []window{{ms(50), ms(60)}, {ms(100), ms(420)}}; !slices.Equal(got, want) {
		t.Fatalf("data-line windows %v, want %v", got, want)
	}
	for _, c := range []struct {
		a, b int
		want bool
	}{
		{0, 20, false}, {40, 50, true}, {55, 58, true}, {61, 99, false}, {90, 110, true},
		{200, 220, true}, {400, 420, true}, {401, 420, false},
	} {
		if got := overlaps(ws, ms(c.a), ms(c.b)); got != c.want {
			t.Errorf("overlaps([%d, %d] ms) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// TestSimSustainedNeedsStampAccuracy: a load whose sends are on time but
// whose stamps are not (the call-3 row at 1,500 req/s: lag p99 0.151 ms,
// ITL error p99 5,317 µs, all ok) is not sustained.
func TestSimSustainedNeedsStampAccuracy(t *testing.T) {
	us := func(v float64) errStats { return errStats{N: 1, P99Us: &v} }
	for _, tc := range []struct {
		name  string
		lag   time.Duration
		itl   errStats
		ok, n int
		want  bool
	}{
		{"sends and stamps on time", 151 * time.Microsecond, us(440), 100, 100, true},
		{"at the bound", 151 * time.Microsecond, us(450), 100, 100, true},
		{"sends on time, stamps late", 151 * time.Microsecond, us(5317), 100, 100, false},
		{"sends late", 1001 * time.Microsecond, us(100), 100, 100, false},
		{"a request failed", 151 * time.Microsecond, us(100), 99, 100, false},
		{"no gap compared", 151 * time.Microsecond, errStats{}, 100, 100, false},
	} {
		if got := simSustained(tc.lag, tc.itl, tc.ok, tc.n, defaultStampAccuracy); got != tc.want {
			t.Errorf("%s: simSustained = %t, want %t", tc.name, got, tc.want)
		}
	}
}
