package clientbench

import (
	"encoding/json"
	"math"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/transferlab/transferlab/loadgen"
	"github.com/transferlab/transferlab/sim"
)

// checkITLSection checks a smallBench ITL section (50 req/s for 0.2 s: 10
// requests of 16 tokens per client, 15 gaps each). Only sanity is asserted
// of the figures (the machine is shared): errors finite and ≥ 0, ordered.
func checkITLSection(t *testing.T, s *itlSection, server, pinned string) {
	t.Helper()
	if s == nil {
		t.Fatal("no itl_accuracy section")
	}
	if s.RateRPS != 50 || s.DurationS != 0.2 || s.InputTokens != itlInputTokens || s.OutputTokens != itlOutputTokens || s.TargetP99Us != 200 {
		t.Errorf("settings not echoed: %+v", s)
	}
	if !strings.HasPrefix(s.Server, server) || !strings.HasPrefix(s.Pinned, pinned) {
		t.Errorf("server %q pinned %q, want prefixes %q and %q", s.Server, s.Pinned, server, pinned)
	}
	if runtime.GOOS == "linux" && (len(s.LoadAvgBefore) != 3 || len(s.LoadAvgAfter) != 3) {
		t.Errorf("load averages %v / %v, want 3 figures each", s.LoadAvgBefore, s.LoadAvgAfter)
	}
	if len(s.Clients) != 2 {
		t.Fatalf("%d ITL rows, want 2", len(s.Clients))
	}
	for i, want := range []string{clientReactor, clientNetHTTP} {
		c := s.Clients[i]
		if c.ITLWithinTargetPct == nil || *c.ITLWithinTargetPct < 0 || *c.ITLWithinTargetPct > 100 {
			t.Errorf("%s: within-target share %v, want a percentage", want, c.ITLWithinTargetPct)
		}
		if c.Client != want || c.Scheduled != 10 || c.OK != 10 || c.Compared != 10 || c.NotOK != 0 || c.MissingTruth != 0 || c.EventCountMismatch != 0 {
			t.Errorf("ITL row %+v: want %s with all 10 requests ok and compared (the simulator flushes every token as its own event)", c, want)
		}
		for _, e := range []struct {
			name string
			st   errStats
			n    int
		}{{"ITL", c.ITLError, 10 * (itlOutputTokens - 1)}, {"TTFT", c.TTFTError, 10}} {
			if e.st.N != e.n || e.st.P50Us == nil || e.st.P99Us == nil || e.st.MaxUs == nil || e.st.MeanSignedUs == nil {
				t.Errorf("%s %s error %+v: want n=%d and every figure set", want, e.name, e.st, e.n)
				continue
			}
			p50, p99, mx := *e.st.P50Us, *e.st.P99Us, *e.st.MaxUs
			if math.IsNaN(p99) || math.IsInf(mx, 0) || p50 < 0 || p50 > p99 || p99 > mx {
				t.Errorf("%s %s error p50 %v p99 %v max %v: want finite, 0 ≤ p50 ≤ p99 ≤ max", want, e.name, p50, p99, mx)
			}
		}
	}
}

// TestBenchClientITLPinned runs the ITL check the default way (a serve-sim
// child of this test binary per client, through TestMain) with --pin, and
// checks the section and that the CPU mask is given back.
func TestBenchClientITLPinned(t *testing.T) {
	if testing.Short() {
		t.Skip("bench-client smoke run: skipped under -short")
	}
	cpus, err := allowedCPUs()
	if err != nil || len(cpus) < 2 {
		t.Skipf("--pin needs Linux and 2 CPUs: %v, %v", cpus, err)
	}
	// Not parallel: --pin changes this process's CPU mask while it runs.
	args := []string{"bench-client", "--rates", "20", "--duration", "100ms", "--tokens", "2", "--in-flight", "2", "--vegeta-rate", "20",
		"--itl-rate", "50", "--itl-duration", "200ms", "--pin", "--json", "--stages", "streams,memory,vegeta,itl"}
	out, errOut, code, err := runCLI(t, args...)
	if err != nil || code != 0 {
		t.Fatalf("exit %d: %v\nstderr: %s", code, err, errOut)
	}
	var rep benchReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("JSON does not parse: %v\n%.1000s", err, out)
	}
	checkITLSection(t, rep.ITL, "serve-sim child process", "simulator child on CPU "+strconv.Itoa(cpus[len(cpus)-1]))
	after, err := allowedCPUs()
	if err != nil || len(after) != len(cpus) {
		t.Errorf("CPU mask after --pin: %v (%v), want %v back", after, err, cpus)
	}
}

// TestBenchClientITLFlags: bad ITL flags are refused before anything runs.
func TestBenchClientITLFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"negative rate", []string{"--itl-rate", "-1"}, "--itl-rate -1"},
		{"zero duration", []string{"--itl-duration", "0s"}, "--itl-duration 0s"},
		{"no request", []string{"--itl-rate", "1", "--itl-duration", "10ms"}, "schedule no request"},
		{"pin in-process", []string{"--in-process", "--pin"}, "--pin: needs the simulator in a child process"},
		{"unknown client", []string{"--clients", "curl"}, `unknown client "curl"`},
		{"zero events per write", []string{"--server-events-per-write", "0"}, "--server-events-per-write 0"},
		{"events per write with an ITL", []string{"--server-events-per-write", "8", "--itl", "1ms"}, "1 unless --itl is 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, code, err := runCLI(t, append([]string{"bench-client"}, tc.args...)...)
			if err == nil || code == 0 || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("exit %d, err %v: want an error naming %q", code, err, tc.want)
			}
		})
	}
}

func ns(d time.Duration) int64 { return int64(d) }

// TestCompareTruth checks the pairing and the arithmetic against hand-made
// truth: known true gaps, measured gaps off by known amounts.
func TestCompareTruth(t *testing.T) {
	t.Parallel()
	us := time.Microsecond
	// Request 0: true flushes at arrival+1 ms, +2 ms, +4 ms; measured events
	// 1 ms + 100 µs after send, then gaps 1 ms − 50 µs and 2 ms + 300 µs:
	// ITL errors −50 µs and +300 µs; TTFT error +100 µs.
	truth := map[string]sim.TruthLine{
		"0": {ID: "0", ArrivedNs: ns(5 * time.Second), TokenFlushedNs: []int64{ns(5*time.Second + time.Millisecond), ns(5*time.Second + 2*time.Millisecond), ns(5*time.Second + 4*time.Millisecond)}},
		"1": {ID: "1", ArrivedNs: 0, TokenFlushedNs: []int64{10, 20}},
	}
	sent := 7 * time.Millisecond
	recs := []loadgen.Record{
		{RequestID: 0, State: loadgen.StateOK, SentAt: sent, Events: []loadgen.TokenEvent{
			{At: sent + 1100*us, Tokens: 1}, {At: sent + 2050*us, Tokens: 1}, {At: sent + 4350*us, Tokens: 1}}},
		// Three events where the simulator flushed two: counted, not compared.
		{RequestID: 1, State: loadgen.StateOK, SentAt: 1, Events: []loadgen.TokenEvent{{At: 2, Tokens: 1}, {At: 3, Tokens: 1}, {At: 4, Tokens: 1}}},
		{RequestID: 2, State: loadgen.StateOK, SentAt: 1, Events: []loadgen.TokenEvent{{At: 2, Tokens: 1}}}, // no truth
		{RequestID: 3, State: loadgen.StateTimeout, Error: "deadline"},
	}
	var row itlClientRow
	compareTruth(&row, recs, truth)
	if row.ITLWithinTargetPct == nil || *row.ITLWithinTargetPct != 50 {
		t.Errorf("within 200 µs: %v %%, want 50 (50 µs in, 300 µs out)", row.ITLWithinTargetPct)
	}
	if row.OK != 3 || row.NotOK != 1 || row.MissingTruth != 1 || row.EventCountMismatch != 1 || row.Compared != 1 ||
		row.FirstError != "request 3: timeout: deadline" {
		t.Errorf("counts %+v", row)
	}
	f := func(v *float64) float64 {
		if v == nil {
			return math.NaN()
		}
		return *v
	}
	for _, c := range []struct {
		name          string
		st            errStats
		n             int
		p50, max, avg float64
	}{
		{"ITL", row.ITLError, 2, 50, 300, 125},
		{"TTFT", row.TTFTError, 1, 100, 100, 100},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.st.N != c.n || math.Abs(f(c.st.P50Us)-c.p50) > 1e-9 || math.Abs(f(c.st.P99Us)-c.max) > 1e-9 ||
				math.Abs(f(c.st.MaxUs)-c.max) > 1e-9 || math.Abs(f(c.st.MeanSignedUs)-c.avg) > 1e-9 {
				t.Errorf("%+v: want n=%d p50 %v p99=max %v mean signed %v µs", c.st, c.n, c.p50, c.max, c.avg)
			}
		})
	}
}

// TestErrStats: nearest-rank quantiles of |error|; nothing to summarise
// gives nulls, never 0.
func TestErrStats(t *testing.T) {
	t.Parallel()
	var e []time.Duration
	for i := 1; i <= 200; i++ { // −1 … −100 µs and +1 … +100 µs
		d := time.Duration((i+1)/2) * time.Microsecond
		if i%2 == 0 {
			d = -d
		}
		e = append(e, d)
	}
	s := newErrStats(e)
	if s.N != 200 || *s.P50Us != 50 || *s.P99Us != 99 || *s.MaxUs != 100 || *s.MeanSignedUs != 0 {
		t.Errorf("%+v: want n 200, p50 50, p99 99, max 100, mean 0 µs", s)
	}
	js, _ := json.Marshal(newErrStats(nil))
	if string(js) != `{"n":0,"p50_us":null,"p99_us":null,"max_us":null,"mean_signed_us":null}` {
		t.Errorf("empty: %s", js)
	}
}

// TestDecodeTruth: a bad line is named by source and line number.
func TestDecodeTruth(t *testing.T) {
	t.Parallel()
	m, err := decodeTruth(strings.NewReader(`{"id":"a","arrived_ns":5,"token_flushed_ns":[6,8]}`+"\n"+`{"id":"b"}`+"\n"), "src")
	if err != nil || len(m) != 2 || m["a"].TokenFlushedNs[1] != 8 {
		t.Fatalf("%v %v", m, err)
	}
	if _, err := decodeTruth(strings.NewReader("{\"id\":\"a\"}\nnot json\n"), "http://x/v1/truth"); err == nil || !strings.Contains(err.Error(), "http://x/v1/truth line 2") {
		t.Errorf("err = %v, want the source and line 2", err)
	}
}
