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
	"github.com/transferlab/transferlab/sim"
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

// TestSustainedOneCriterion: a load is sustained, against either server,
// when schedule-lag p99 ≤ 1 ms and every request is ok; the stamps' accuracy
// against serve-sim's truth is judged apart (the call-3 row at 1,500 req/s,
// lag p99 0.151 ms, ITL error p99 5,317 µs, all ok, is sustained with its
// stamps outside the accuracy).
func TestSustainedOneCriterion(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lag   time.Duration
		ok, n int
		want  bool
	}{
		{"on time, all ok", 151 * time.Microsecond, 100, 100, true},
		{"at the bound", time.Millisecond, 100, 100, true},
		{"sends late", 1001 * time.Microsecond, 100, 100, false},
		{"a request failed", 151 * time.Microsecond, 99, 100, false},
	} {
		if got := sustained(tc.lag, tc.ok, tc.n); got != tc.want {
			t.Errorf("%s: sustained = %t, want %t", tc.name, got, tc.want)
		}
	}
	us := func(v float64) errStats { return errStats{N: 1, P99Us: &v} }
	for _, tc := range []struct {
		name string
		itl  errStats
		want bool
	}{
		{"within", us(440), true}, {"at the bound", us(450), true}, {"late", us(5317), false}, {"no gap compared", errStats{}, false},
	} {
		if got := stampsWithin(tc.itl, defaultStampAccuracy); got != tc.want {
			t.Errorf("%s: stampsWithin = %t, want %t", tc.name, got, tc.want)
		}
	}
}

// TestSimSummaryLine: the summary puts serve-sim's sustained rate beside the
// fake server's with their ratio, and the highest rate whose stamps held
// apart from both.
func TestSimSummaryLine(t *testing.T) {
	fake := 6000
	c := clientSummary{Client: clientReactor, SustainedRPS: &fake}
	s := &simSection{SustainedRPS: map[string]int{clientReactor: 4800}, StampsHeldRPS: map[string]int{clientReactor: 200}}
	want := "reactor: highest req/s sustained: serve-sim 4800; fake server 6000 (serve-sim / fake 0.80); stamps within accuracy up to 200 req/s"
	if got := simSummaryLine(c, s); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	s = &simSection{SustainedRPS: map[string]int{}, StampsHeldRPS: map[string]int{}}
	want = "reactor: highest req/s sustained: serve-sim none of those tried; fake server 6000; stamps within accuracy at none of the loads tried"
	if got := simSummaryLine(c, s); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// TestSimSectionAdd: the sustained rate is the highest load that met the
// one criterion, stamps or not; the stamps' rate the highest of those whose
// stamps were within the accuracy too; per client.
func TestSimSectionAdd(t *testing.T) {
	sec := &simSection{SustainedRPS: map[string]int{}, StampsHeldRPS: map[string]int{}}
	for _, r := range []simRow{
		{Client: clientReactor, OfferedRPS: 500, Sustained: true, StampsWithin: true},
		{Client: clientReactor, OfferedRPS: 2500, Sustained: true},
		{Client: clientReactor, OfferedRPS: 6500, StampsWithin: true}, // sends late
		{Client: clientNetHTTP, OfferedRPS: 500, Sustained: true},
	} {
		sec.add(r)
	}
	if len(sec.Rows) != 4 || sec.SustainedRPS[clientReactor] != 2500 || sec.StampsHeldRPS[clientReactor] != 500 {
		t.Errorf("reactor: %d rows, sustained %d, stamps held %d; want 4 rows, 2500, 500", len(sec.Rows), sec.SustainedRPS[clientReactor], sec.StampsHeldRPS[clientReactor])
	}
	if sec.SustainedRPS[clientNetHTTP] != 500 {
		t.Errorf("net/http sustained %d, want 500", sec.SustainedRPS[clientNetHTTP])
	}
	if _, ok := sec.StampsHeldRPS[clientNetHTTP]; ok {
		t.Errorf("net/http stamps held at %d, want none", sec.StampsHeldRPS[clientNetHTTP])
	}
}

// TestServerWriteLag: per token, the flush minus the end of the step that
// generated it, over every request in the export (a token not yet flushed
// has no lag).
func TestServerWriteLag(t *testing.T) {
	truth := map[string]sim.TruthLine{
		"0": {ID: "0", TokenGeneratedNs: []int64{1000, 2000}, TokenFlushedNs: []int64{1010, 2030}},
		"1": {ID: "1", TokenGeneratedNs: []int64{500, 900, 1300}, TokenFlushedNs: []int64{520}},
	}
	got := serverWriteLag(truth)
	if got.N != 3 || got.MaxUs == nil || *got.MaxUs != 0.03 || *got.P50Us != 0.02 {
		t.Errorf("write lag %+v, want 3 tokens, p50 0.02 µs, max 0.03 µs", got)
	}
}

// TestServerQueueDelay: admission minus arrival over the admitted requests
// only.
func TestServerQueueDelay(t *testing.T) {
	at := func(v int64) *int64 { return &v }
	truth := map[string]sim.TruthLine{
		"0": {ID: "0", ArrivedNs: 1000, AdmittedNs: at(4000)},
		"1": {ID: "1", ArrivedNs: 1000, AdmittedNs: at(2000)},
		"2": {ID: "2", ArrivedNs: 1000}, // still queued
	}
	got := serverQueueDelay(truth)
	if got.N != 2 || got.MaxUs == nil || *got.MaxUs != 3 || *got.P50Us != 1 {
		t.Errorf("queue delay %+v, want 2 requests, p50 1 µs, max 3 µs", got)
	}
}
