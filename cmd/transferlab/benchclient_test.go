package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// failingChild is the first argument that makes this test binary act as a
// fast-server child that fails on shutdown (TestMain).
const failingChild = "fail-child"

// TestMain lets this test binary stand in for transferlab when bench-client
// starts its fast-server or simulator (serve-sim) child from
// os.Executable() (the default mode).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && (os.Args[1] == "bench-client" || os.Args[1] == "serve-sim") {
		os.Exit(run(os.Args[1:]))
	}
	if len(os.Args) > 1 && os.Args[1] == failingChild {
		// A fast-server child that serves nothing and fails when told to
		// stop, as a child whose server broke would.
		fmt.Println("http://127.0.0.1:1")
		_, _ = io.Copy(io.Discard, os.Stdin)
		fmt.Fprintln(os.Stderr, "transferlab: fake server broke: disk on fire")
		os.Exit(3)
	}
	os.Exit(m.Run())
}

// smallBench are bench-client's smallest useful settings: one 20 req/s
// streaming run of 0.2 s (4 requests of 2 tokens), 8 streams held open, a
// 0.2 s vegeta comparison at 20 req/s, and an ITL check of 0.2 s at 50 req/s
// (10 requests of 16 tokens: 150 gaps per client).
var smallBench = []string{"bench-client", "--rates", "20", "--duration", "200ms", "--tokens", "2", "--in-flight", "8", "--vegeta-rate", "20",
	"--itl-rate", "50", "--itl-duration", "200ms"}

// TestBenchClientJSON is a smoke run (in-process server) checking the JSON
// has every documented field with consistent counts. No speed is asserted:
// the figures describe the machine, and CI's is shared.
func TestBenchClientJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("bench-client smoke run: skipped under -short")
	}
	t.Parallel()
	out, errOut, code, err := runCLI(t, append(slices.Clone(smallBench), "--in-process", "--json", "--gc-percent", "400")...)
	if err != nil || code != 0 {
		t.Fatalf("exit %d: %v\nstderr: %s", code, err, errOut)
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("JSON does not parse: %v\n%.1000s", err, out)
	}
	for _, k := range []string{"note", "server", "go_version", "num_cpu", "gomaxprocs", "tokens_per_stream", "server_itl_ms", "server_events_per_write", "duration_s",
		"stream", "in_flight", "vegeta", "clients", "itl_accuracy"} {
		if _, ok := rep[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	clients, _ := rep["clients"].([]any)
	if len(clients) != 3 {
		t.Fatalf("%d client summaries, want 3 (reactor, lean and net/http by default)", len(clients))
	}
	for _, k := range []string{"client", "sustained_rps", "sustained_events_per_s", "sustained_cpu_ms_per_1k_events", "dispatch_sustained_rps",
		"goroutines_per_in_flight", "heap_bytes_per_in_flight", "stack_bytes_per_in_flight", "heap_stack_bytes_per_in_flight",
		"rss_bytes_per_in_flight", "open_streams", "pacing", "rate_ratio_ours_over_vegeta", "mean_latency_ratio_ours_over_vegeta"} {
		if _, ok := clients[0].(map[string]any)[k]; !ok {
			t.Errorf("client summary lacks %q", k)
		}
	}
	if s, _ := rep["server"].(string); !strings.HasPrefix(s, "in-process") {
		t.Errorf("server = %q, want the in-process label (figures include the server)", s)
	}
	// Decode the typed report for the counts.
	var typed benchReport
	if err := json.Unmarshal([]byte(out), &typed); err != nil {
		t.Fatal(err)
	}
	if len(typed.Stream) != 3 {
		t.Fatalf("%d stream rows, want one per --rates entry and client (3)", len(typed.Stream))
	}
	for i, want := range []string{clientReactor, clientLean, clientNetHTTP} {
		row := typed.Stream[i]
		if row.Client != want || row.OfferedRPS != 20 || row.Scheduled != 4 || row.OK != 4 {
			t.Errorf("stream row %+v: want client %s, offered 20, scheduled 4 (20 req/s × 0.2 s), all 4 ok against the fast server", row, want)
		}
		if row.LagP99Ms < 0 || row.DispatchLagP99Ms < 0 || row.EventsPerS <= 0 {
			t.Errorf("stream row %+v: lags must be ≥ 0 and events must have arrived", row)
		}
		c := typed.Clients[i]
		if c.Client != want || c.Pacing.OfferedRPS != 20 || c.Pacing.BinMs != 10 || c.OpenStreams < 8 || c.OursSuccess != 1 {
			t.Errorf("client summary %+v: want %s, pacing at 20 req/s in 10 ms bins, at least 8 streams seen open (the health check may add one), every request ok", c, want)
		}
	}
	checkITLSection(t, typed.ITL, "in-process simulator", "not pinned")
	if typed.Tokens != 2 || typed.InFlight != 8 || typed.Vegeta.RateRPS != 20 {
		t.Errorf("settings not echoed: tokens %d in-flight %d vegeta %d", typed.Tokens, typed.InFlight, typed.Vegeta.RateRPS)
	}
	for _, k := range []string{"offered_rps", "achieved_send_rps", "events_per_s", "ok", "scheduled", "schedule_lag_p99_ms",
		"dispatch_lag_p99_ms", "client_bound", "cpu_ms_per_1k_events", "cpu_cores_used", "sustained"} {
		if _, ok := rep["stream"].([]any)[0].(map[string]any)[k]; !ok {
			t.Errorf("stream row lacks %q", k)
		}
	}
}

// TestBenchClientTable runs the default mode (the fast server in a child
// process: this test binary, through TestMain) and checks the table's
// documented columns and summary lines.
func TestBenchClientTable(t *testing.T) {
	if testing.Short() {
		t.Skip("bench-client smoke run: skipped under -short")
	}
	t.Parallel()
	jsonOut := filepath.Join(t.TempDir(), "bench.json")
	out, errOut, code, err := runCLI(t, append(slices.Clone(smallBench), "--json-out", jsonOut, "--server-events-per-write", "3")...)
	if err != nil || code != 0 {
		t.Fatalf("exit %d: %v\nstderr: %s", code, err, errOut)
	}
	// --json-out writes the same run's report beside the table.
	b, err := os.ReadFile(jsonOut)
	if err != nil {
		t.Fatal(err)
	}
	var rep benchReport
	if err := json.Unmarshal(b, &rep); err != nil || len(rep.Clients) != 3 || rep.ITL == nil || rep.EventsPerWrite != 3 {
		t.Errorf("--json-out %s: err %v, %d clients, ITL section %t, server_events_per_write %d (want 3)", jsonOut, err, len(rep.Clients), rep.ITL != nil, rep.EventsPerWrite)
	}
	lines := strings.Split(out, "\n")
	var header string
	for _, l := range lines {
		if strings.Contains(l, "offered req/s") {
			header = l
		}
	}
	if header == "" {
		t.Fatalf("no table header in:\n%s", out)
	}
	for _, col := range []string{"client", "offered req/s", "sent req/s", "events/s", "ok", "lag p99 ms", "dispatch lag p99 ms",
		"client-bound", "CPU ms/1k events", "cores used", "lag ≤ 1 ms & all ok"} {
		if !strings.Contains(header, col) {
			t.Errorf("header lacks column %q: %s", col, header)
		}
	}
	for _, want := range []string{"not a lab result", "server: child process (client measured alone)", " 4/4 ",
		"server writes 3 token events per write after the first",
		"side by side", "highest req/s, schedule-lag p99 ≤ 1 ms, all ok", "goroutines per in-flight stream (8 open)",
		"heap+stack B per in-flight stream", "RSS B per in-flight stream", "pacing at 20 req/s", "send rate / vegeta's",
		"vegeta at 20 req/s", "targets (issue 5), reactor:", "targets (issue 5), lean:", "targets (issue 5), net/http:",
		"ITL accuracy vs the simulator's truth", "50 req/s uniform for 0.2 s", "simulator: serve-sim child process per client", "pinned: not pinned",
		"ITL err p50 µs", "count mismatch", " 10/10 "} {
		if !strings.Contains(out, want) {
			t.Errorf("table output lacks %q:\n%s", want, out)
		}
	}
}

// TestBenchTableNoRateQualified: when no tried rate met the lag budget the
// table says so and the JSON holds null, never 0 req/s.
func TestBenchTableNoRateQualified(t *testing.T) {
	t.Parallel()
	r := &benchReport{Clients: []clientSummary{{Client: clientLean}}}
	var b strings.Builder
	printBenchTable(&b, r)
	out := b.String()
	if !strings.Contains(out, "none of the rates tried") || !strings.Contains(out, "– (no rate qualified)") {
		t.Errorf("table does not say no rate qualified:\n%s", out)
	}
	js, err := json.Marshal(r.Clients[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"sustained_rps":null`, `"sustained_events_per_s":null`, `"dispatch_sustained_rps":null`} {
		if !strings.Contains(string(js), k) {
			t.Errorf("JSON %s lacks %s", js, k)
		}
	}
}

// TestServeFastExpectedShutdown: the fast-server child, told to stop (stdin
// closed) while a stream is still open past the shutdown grace, closes it
// and returns no error (it used to return "context deadline exceeded",
// which the child printed on the parent's stderr while the parent exited 0).
func TestServeFastExpectedShutdown(t *testing.T) {
	t.Parallel()
	o := benchClientOpts{serve: "127.0.0.1:0", tokens: 2, itl: time.Hour, shutdownGrace: 50 * time.Millisecond}
	stdinR, stdinW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- serveFast(context.Background(), o, outW, stdinR) }()
	url, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	body := `{"prompt":"x","max_tokens":2,"stream":true}`
	resp, err := http.Post(strings.TrimSpace(url)+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// The first token event arrives; the second is an hour away, so the
	// stream is open when the child is told to stop.
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	_ = stdinW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serveFast after the parent closed stdin: %v, want nil (an expected shutdown)", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("serveFast did not return within a minute of stdin closing")
	}
}

// TestChildFailureIsAnError: a fast-server child that exits non-zero makes
// close return an error carrying the child's own message, and its stderr is
// not passed through to ours.
func TestChildFailureIsAnError(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := startChild(context.Background(), exe, []string{failingChild})
	if err != nil {
		t.Fatal(err)
	}
	if srv.url != "http://127.0.0.1:1" {
		t.Errorf("url = %q", srv.url)
	}
	var err2 error
	closeServer(srv, &err2)
	if err2 == nil || !strings.Contains(err2.Error(), "fake server broke: disk on fire") || !strings.Contains(err2.Error(), "exit status 3") {
		t.Fatalf("close error = %v, want the child's exit status and message", err2)
	}
	t.Run("no URL", func(t *testing.T) {
		_, err := startChild(context.Background(), exe, []string{"bench-client", "--serve-fast", "127.0.0.1:not-a-port"})
		if err == nil || !strings.Contains(err.Error(), "gave no URL") || !strings.Contains(err.Error(), "not-a-port") {
			t.Fatalf("err = %v, want the child's listen error", err)
		}
	})
}
