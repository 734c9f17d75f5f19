package clientbench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/transferlab/transferlab/internal/interrupt"
)

// failingChild is the first argument that makes this test binary act as a
// fast-server child that fails on shutdown (TestMain).
const failingChild = "fail-child"

// TestMain lets this test binary stand in for transferlab when bench-client
// starts its fast-server, simulator or replay child from os.Executable()
// (the default mode): `bench-client FLAGS` runs Run as the transferlab
// binary's bench-client does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == Command {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code, err := execute(ctx, os.Stdin, os.Stdout, os.Stderr, os.Args[1:]...)
		stop()
		if err != nil {
			fmt.Fprintf(os.Stderr, "transferlab: %v\n", err)
		}
		os.Exit(code)
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

// runCLI runs `bench-client FLAGS` (args, Command first) as the transferlab
// binary does, capturing stdout and stderr; code is the exit status.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int, err error) {
	t.Helper()
	var out, errOut strings.Builder
	code, err = execute(context.Background(), strings.NewReader(""), &out, &errOut, args...)
	return out.String(), errOut.String(), code, err
}

// execute parses args (Command, then AddFlags' flags) and calls Run; code
// is the exit status (1 for a bad flag or any error that is no ExitError).
func execute(ctx context.Context, in io.Reader, out, log io.Writer, args ...string) (int, error) {
	if len(args) == 0 || args[0] != Command {
		return 1, fmt.Errorf("want %s first, got %q", Command, args)
	}
	var o Options
	fs := pflag.NewFlagSet(Command, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.AddFlags(fs)
	if err := fs.Parse(args[1:]); err != nil {
		return 1, err
	}
	if err := Run(ctx, o, in, out, log); err != nil {
		var ee *ExitError
		if errors.As(err, &ee) {
			return ee.Code, err
		}
		return 1, err
	}
	return 0, nil
}

// smallBench are bench-client's smallest useful settings: one 20 req/s
// streaming run of 0.2 s (4 requests of 2 tokens), 8 streams held open, a
// 0.2 s vegeta comparison at 20 req/s, and an ITL check of 0.2 s at 50 req/s
// (10 requests of 16 tokens: 150 gaps per client).
var smallBench = []string{"bench-client", "--rates", "20", "--duration", "200ms", "--tokens", "2", "--in-flight", "8", "--vegeta-rate", "20",
	"--itl-rate", "50", "--itl-duration", "200ms", "--stages", "streams,memory,vegeta,itl"}

// TestBenchClientSimAndHOL runs the sweep against serve-sim and the
// head-of-line check at their smallest and checks what they report against
// what was sent and what the servers say: every request ok, every ok
// request's gaps paired with the simulator's truth, the long-line streams
// counted apart. No speed is asserted.
func TestBenchClientSimAndHOL(t *testing.T) {
	if testing.Short() {
		t.Skip("bench-client run: skipped under -short")
	}
	t.Parallel()
	prof := filepath.Join(t.TempDir(), "server")
	out, errOut, code, err := runCLI(t, "bench-client", "--stages", "sim,hol", "--clients", "reactor,net/http", "--sim-rates", "20",
		"--sim-duration", "200ms", "--hol-rate", "20", "--hol-duration", "500ms", "--hol-bytes", "200000", "--json", "--server-cpuprofile", prof)
	if err != nil || code != 0 {
		t.Fatalf("exit %d: %v\nstderr: %s", code, err, errOut)
	}
	if st, err := os.Stat(prof + "-20.prof"); err != nil || st.Size() == 0 {
		t.Errorf("the serve-sim child's CPU profile (--server-cpuprofile): %v", err)
	}
	var rep benchReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("JSON: %v\n%s", err, out)
	}
	if rep.Sim == nil || len(rep.Sim.Rows) != 2 || rep.HOL == nil || len(rep.HOL.Rows) != 4 {
		t.Fatalf("sections: sim %+v, head-of-line %+v; want 2 and 4 rows (2 clients, 2 long line kinds)", rep.Sim, rep.HOL)
	}
	for _, r := range rep.Sim.Rows {
		if r.OK != 4 || r.Scheduled != 4 || r.EventCountMismatch != 0 || r.ITLError.N != 4*(simOutputTokens-1) || r.TTFTError.N != 4 {
			t.Errorf("%s vs serve-sim: ok %d/%d, count mismatches %d, ITL gaps %d, TTFT %d; want 4/4, 0, %d, 4",
				r.Client, r.OK, r.Scheduled, r.EventCountMismatch, r.ITLError.N, r.TTFTError.N, 4*(simOutputTokens-1))
		}
	}
	for _, r := range rep.HOL.Rows {
		// 10 requests (0.5 s at 20 req/s); with every 10th id carrying the line, id 0 alone does.
		if r.OK != 10 || r.Long != 1 || r.LongOK != 1 || r.GapError.N != 9*(holTokens-1) {
			t.Errorf("%s head-of-line, %s line: ok %d/%d, long %d/%d, gaps %d; want 10/10, 1/1, %d", r.Client, r.Line, r.OK, r.Scheduled, r.LongOK, r.Long, r.GapError.N, 9*(holTokens-1))
		}
		if r.GapErrorDuring.N+r.GapErrorApart.N != r.GapError.N {
			t.Errorf("%s head-of-line, %s line: %d gaps during long lines + %d apart, want all %d", r.Client, r.Line, r.GapErrorDuring.N, r.GapErrorApart.N, r.GapError.N)
		}
	}
	for i, want := range []string{"comment", "comment", "data", "data"} {
		if rep.HOL.Rows[i].Line != want {
			t.Errorf("head-of-line row %d: line %q, want %q", i, rep.HOL.Rows[i].Line, want)
		}
	}
}

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
	if len(clients) != 2 {
		t.Fatalf("%d client summaries, want 2 (reactor and net/http by default)", len(clients))
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
	if len(typed.Stream) != 2 {
		t.Fatalf("%d stream rows, want one per --rates entry and client (2)", len(typed.Stream))
	}
	for i, want := range []string{clientReactor, clientNetHTTP} {
		row := typed.Stream[i]
		if row.Client != want || row.OfferedRPS != 20 || row.Scheduled != 4 || row.OK != 4 {
			t.Errorf("stream row %+v: want client %s, offered 20, scheduled 4 (20 req/s × 0.2 s), all 4 ok against the fast server", row, want)
		}
		if row.PromptTokens != simInputTokens {
			t.Errorf("stream row %+v: the fake server saw %d-token prompts, want serve-sim's sweep's %d (one request shape for both)", row, row.PromptTokens, simInputTokens)
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
	if err := json.Unmarshal(b, &rep); err != nil || len(rep.Clients) != 2 || rep.ITL == nil || rep.EventsPerWrite != 3 {
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
		"vegeta at 20 req/s", "targets, reactor:", "targets, net/http:",
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
	// net/http was measured at one rate that missed the lag budget.
	r := &benchReport{Clients: []clientSummary{{Client: clientNetHTTP}}, Stream: []streamRow{{Client: clientNetHTTP, OfferedRPS: 100}}}
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
	o := Options{serve: "127.0.0.1:0", tokens: 2, itl: time.Hour, shutdownGrace: 50 * time.Millisecond}
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

// TestBenchClientFlags: every bad flag is refused before anything runs:
// exit 1 (not 2, "run incomplete"), never a panic or a hang, an error
// naming the flag, and no measuring log line on stderr.
func TestBenchClientFlags(t *testing.T) {
	t.Parallel()
	noDir := filepath.Join(t.TempDir(), "missing", "bench.json")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"zero rate", []string{"--rates", "0"}, "flag --rates: 0 req/s"},           // was: integer divide by zero
		{"negative rate", []string{"--rates", "-5"}, "flag --rates: -5 req/s"},     // was: makeslice panic
		{"rate too high", []string{"--rates", "2000000"}, "flag --rates: 2000000"}, // gap below 1 µs
		{"no rate", []string{"--rates", ""}, "--rates"},                            // pflag refuses an empty list
		{"rate schedules nothing", []string{"--rates", "1", "--duration", "100ms"}, "flag --rates: 1 req/s for --duration 100ms schedules no request"},
		{"zero duration", []string{"--duration", "0s"}, "flag --duration 0s"}, // was: vegeta hung forever
		{"negative duration", []string{"--duration", "-1s"}, "flag --duration -1s"},
		{"zero in-flight", []string{"--in-flight", "0"}, "flag --in-flight 0"},       // was: +Inf per stream, JSON failed
		{"zero vegeta rate", []string{"--vegeta-rate", "0"}, "flag --vegeta-rate 0"}, // was: divide by zero after streaming
		{"vegeta rate schedules nothing", []string{"--vegeta-rate", "1", "--duration", "100ms"}, "flag --vegeta-rate 1 for --duration 100ms schedules no request"},
		{"zero replay rate", []string{"--replay-rate", "0", "--replay-requests", "10"}, "flag --replay-rate 0"}, // was: divide by zero after measuring
		{"negative replay requests", []string{"--replay-requests", "-1"}, "flag --replay-requests -1"},
		{"negative itl", []string{"--itl", "-1s"}, "flag --itl -1s"}, // was: accepted silently
		{"zero tokens", []string{"--tokens", "0"}, "flag --tokens 0"},
		{"duplicate client", []string{"--clients", "reactor,reactor"}, `flag --clients: "reactor" named twice`},
		{"no client", []string{"--clients", ""}, "flag --clients: name at least one client"},
		{"json-out in a missing directory", []string{"--json-out", noDir}, "flag --json-out: open " + noDir},
		{"json-out is a directory", []string{"--json-out", t.TempDir()}, "flag --json-out"},
		{"negative itl rate", []string{"--itl-rate", "-1"}, "--itl-rate -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, errOut, code, err := runCLI(t, append([]string{"bench-client"}, tc.args...)...)
			if err == nil || code != 1 || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("exit %d, err %v: want exit 1 and an error naming %q", code, err, tc.want)
			}
			if strings.Contains(errOut, "bench-client: ") {
				t.Errorf("something was measured before the flag was refused; stderr:\n%s", errOut)
			}
		})
	}
	t.Run("every problem at once", func(t *testing.T) {
		t.Parallel()
		_, _, _, err := runCLI(t, "bench-client", "--rates", "0", "--in-flight", "0", "--clients", "net/http,net/http")
		for _, want := range []string{"--rates", "--in-flight", "--clients"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("err %v: want it to name %s as well", err, want)
			}
		}
	})
	if _, _, err := itlPinning(); err != nil {
		t.Run("pin without 2 CPUs", func(t *testing.T) {
			_, _, code, err := runCLI(t, "bench-client", "--pin")
			if err == nil || code != 1 || !strings.Contains(err.Error(), "flag --pin") {
				t.Fatalf("exit %d, err %v: want --pin refused up front", code, err)
			}
		})
	}
}

// TestProbeWritable: the --json-out check leaves an existing file as it was
// and leaves no file behind where there was none.
func TestProbeWritable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	old := filepath.Join(dir, "old.json")
	if err := os.WriteFile(old, []byte("earlier report"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := probeWritable(old); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(old); string(b) != "earlier report" {
		t.Errorf("existing file now holds %q, want it untouched", b)
	}
	fresh := filepath.Join(dir, "new.json")
	if err := probeWritable(fresh); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Errorf("probe left %s behind (stat: %v)", fresh, err)
	}
}

// TestReportFloatJSON: NaN and ±Inf encode as null (the report always
// encodes: --in-flight 0 once made it fail with "unsupported value: +Inf"),
// and null decodes back to "not measured".
func TestReportFloatJSON(t *testing.T) {
	t.Parallel()
	rep := newBenchReport(Options{clients: []string{clientReactor}, inFlight: 1})
	rep.Clients[0].HeapPerInFlight = reportFloat(math.Inf(1))
	rep.Clients[0].RSSPerInFlight = reportFloat(math.Inf(-1))
	rep.Stream = []streamRow{{Client: clientReactor, EventsPerS: reportFloat(math.NaN()), LagP99Ms: 0.25}}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatalf("report with NaN/Inf figures does not encode: %v", err)
	}
	for _, want := range []string{`"heap_bytes_per_in_flight":null`, `"rss_bytes_per_in_flight":null`, `"events_per_s":null`,
		`"schedule_lag_p99_ms":0.25`, `"ours_success":null`, `"pacing":null`, `"vegeta":null`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON lacks %s:\n%s", want, b)
		}
	}
	var back benchReport
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Clients[0].HeapPerInFlight.measured() || back.Stream[0].EventsPerS.measured() || back.Stream[0].LagP99Ms != 0.25 {
		t.Errorf("decoded %+v / %+v: want null back as not measured, 0.25 as 0.25", back.Clients[0], back.Stream[0])
	}
}

// TestBenchTableMissingStages: a report whose later stages never ran (an
// interrupt after the sweep) prints "not measured" for their figures, never
// a zero, and no target says met without a measurement.
func TestBenchTableMissingStages(t *testing.T) {
	t.Parallel()
	o := Options{clients: []string{clientReactor, clientNetHTTP}, inFlight: 4000, tokens: 128, duration: time.Second}
	rep := newBenchReport(o)
	rep.Stages = []benchStage{{Name: stageStreams, Status: stageInterrupted}, {Name: "memory per in-flight stream", Status: stageNotRun}}
	rep.IncompleteReason = "interrupted by SIGINT"
	rate := 3000
	ev := reportFloat(400000)
	rep.Clients[0].SustainedRPS, rep.Clients[0].SustainedEventsPerS = &rate, &ev
	rep.Stream = []streamRow{{Client: clientReactor, OfferedRPS: 3000, Sustained: true}, {Client: clientNetHTTP, OfferedRPS: 3000}}
	var b strings.Builder
	printBenchTable(&b, &rep)
	out := b.String()
	for _, want := range []string{
		"INCOMPLETE (interrupted by SIGINT)", "streaming sweep: interrupted; memory per in-flight stream: not run",
		"vegeta comparison: not measured",
		// reactor met the throughput target on a rate it finished; net/http's
		// sweep was cut short, so its miss is no verdict.
		"targets, reactor: ≥ 2,000 req/s and ≥ 250,000 events/s at lag p99 ≤ 1 ms: met; ≤ 16 KiB per in-flight request: not measured",
		"targets, net/http: ≥ 2,000 req/s and ≥ 250,000 events/s at lag p99 ≤ 1 ms: not measured (the sweep was cut short before every rate); ≤ 16 KiB per in-flight request: not measured",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "heap+stack B") && strings.Count(line, "not measured") != 2 {
			t.Errorf("memory row not marked not measured: %q", line)
		}
	}
}

// TestThroughputVerdict: the throughput target is met only on a qualifying
// swept rate ≥ 2,000 req/s, NOT met only when a finished sweep tried a rate
// ≥ 2,000 req/s and none qualified, and otherwise not measured, saying why
// (`--rates 250` once printed "NOT met" for a rate never tried).
func TestThroughputVerdict(t *testing.T) {
	t.Parallel()
	rps := func(v int) *int { return &v }
	ev := func(v float64) *reportFloat { f := reportFloat(v); return &f }
	for _, tc := range []struct {
		name      string
		stage     string
		rates     []int // swept rates of the client
		sustained *int
		events    *reportFloat
		want      string
	}{
		{"no streaming row", stageDone, nil, nil, nil, "not measured"},
		{"only 250 req/s swept, sustained", stageDone, []int{250}, rps(250), ev(30000), "not measured (highest rate swept: 250 req/s)"},
		{"only lower rates swept, none sustained", stageDone, []int{500, 1999}, nil, nil, "not measured (highest rate swept: 1999 req/s)"},
		{"2,000 req/s qualified", stageDone, []int{1000, 2000}, rps(2000), ev(260000), "met"},
		{"2,000 req/s tried, not sustained", stageDone, []int{1000, 2000}, rps(1000), ev(130000), "NOT met"},
		{"2,000 req/s sustained, too few events", stageDone, []int{2000}, rps(2000), ev(240000), "NOT met"},
		{"3,000 tried, nothing sustained", stageDone, []int{3000}, nil, nil, "NOT met"},
		{"sweep cut short below 2,000", stageInterrupted, []int{250}, rps(250), ev(30000), "not measured (the sweep was cut short before every rate)"},
		{"sweep cut short, 2,000 qualified", stageInterrupted, []int{2000}, rps(2000), ev(260000), "met"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := &benchReport{Stages: []benchStage{{Name: stageStreams, Status: tc.stage}}}
			for _, rate := range tc.rates {
				r.Stream = append(r.Stream, streamRow{Client: clientNetHTTP, OfferedRPS: rate})
			}
			r.Stream = append(r.Stream, streamRow{Client: clientReactor, OfferedRPS: 4000}) // another client's rows do not count
			c := &clientSummary{Client: clientNetHTTP, SustainedRPS: tc.sustained, SustainedEventsPerS: tc.events}
			if got := throughputVerdict(r, c); got != tc.want {
				t.Errorf("throughputVerdict = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestInterruptStatus: bench-client exits 128 + the signal's number: 130 on
// SIGINT, 143 on SIGTERM, 130 for any other cancellation.
func TestInterruptStatus(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		cause error
		want  int
	}{
		{"SIGINT", interrupt.Error{Sig: os.Interrupt}, 130},
		{"SIGTERM", interrupt.Error{Sig: syscall.SIGTERM}, 143},
		{"plain cancel", nil, 130},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancelCause(context.Background())
			cancel(tc.cause)
			if got := interruptStatus(ctx); got != tc.want {
				t.Errorf("interruptStatus = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestMemoryVerdict: the ≤ 16 KiB target is judged only on a measurement of
// every held stream; zero, absent or partial figures are not measured (two
// copies of one client once showed "met" from 0 B).
func TestMemoryVerdict(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		inFlight  int
		open      int
		heapStack reportFloat
		want      string
	}{
		{"never measured", 4000, 0, notMeasured, "not measured"},
		{"zero value from a zero report", 0, 0, 0, "not measured (0 of 0 streams seen open)"},
		{"zero bytes", 4000, 4001, 0, "not measured (0 B per stream is no measurement)"},
		{"too few streams open", 4000, 1000, 1000, "not measured (1000 of 4000 streams seen open)"},
		{"met", 4000, 4001, 16384, "met"},
		{"not met", 4000, 4000, 16385, "NOT met"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &benchReport{InFlight: tc.inFlight}
			c := &clientSummary{OpenStreams: tc.open, HeapStackPerInFlight: tc.heapStack}
			if got := memoryVerdict(r, c); got != tc.want {
				t.Errorf("memoryVerdict = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRunStages: the stage runner stops at the first stage that does not
// finish, marks it interrupted (ctx ended, cause kept) or failed (its error
// returned), and marks the rest not run.
func TestRunStages(t *testing.T) {
	t.Parallel()
	ok := func(context.Context, Options, *benchReport, io.Writer) error { return nil }
	mustNotRun := func(context.Context, Options, *benchReport, io.Writer) error {
		t.Error("a stage ran after the run stopped")
		return nil
	}
	names := []string{"a", "b", "c"}
	t.Run("interrupted", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		stop := func(ctx context.Context, _ Options, _ *benchReport, _ io.Writer) error {
			cancel(interrupt.Error{Sig: os.Interrupt})
			return context.Cause(ctx)
		}
		var rep benchReport
		if err := runStages(ctx, Options{}, &rep, names, []stageFunc{ok, stop, mustNotRun}, io.Discard); err != nil {
			t.Errorf("err = %v: an interrupt is not a failure", err)
		}
		if got := stagesLine(rep.Stages); got != "a: done; b: interrupted; c: not run" || rep.Complete || rep.IncompleteReason != "interrupted by SIGINT" {
			t.Errorf("stages %q complete %t reason %q", got, rep.Complete, rep.IncompleteReason)
		}
	})
	t.Run("failed", func(t *testing.T) {
		boom := func(context.Context, Options, *benchReport, io.Writer) error {
			return errors.New("child broke")
		}
		var rep benchReport
		err := runStages(context.Background(), Options{}, &rep, names, []stageFunc{ok, boom, mustNotRun}, io.Discard)
		if err == nil || err.Error() != "child broke" {
			t.Errorf("err = %v, want the stage's error", err)
		}
		if got := stagesLine(rep.Stages); got != "a: done; b: failed; c: not run" || rep.Complete || rep.Stages[1].Error != "child broke" {
			t.Errorf("stages %q complete %t %+v", got, rep.Complete, rep.Stages)
		}
	})
	t.Run("complete", func(t *testing.T) {
		var rep benchReport
		if err := runStages(context.Background(), Options{}, &rep, names, []stageFunc{ok, ok, ok}, io.Discard); err != nil || !rep.Complete ||
			stagesLine(rep.Stages) != "a: done; b: done; c: done" {
			t.Errorf("err %v complete %t stages %q", err, rep.Complete, stagesLine(rep.Stages))
		}
	})
}

// cancelOnLine is a log writer that cancels the run (as a SIGINT would)
// once a line containing match has been logged.
type cancelOnLine struct {
	mu     sync.Mutex
	b      strings.Builder
	match  string
	cancel context.CancelCauseFunc
}

func (c *cancelOnLine) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.b.Write(p)
	if strings.Contains(c.b.String(), c.match) {
		c.cancel(interrupt.Error{Sig: os.Interrupt})
	}
	return len(p), nil
}

// TestBenchClientInterrupted: an interrupt during a run prints the table and
// writes --json-out with every stage finished so far, marked interrupted,
// and exits 130. The interrupt is made deterministic by cancelling when the
// sweep logs its last run (the sweep then ends with that run whole; the
// later stages do not run).
func TestBenchClientInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("bench-client run: skipped under -short")
	}
	t.Parallel()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	log := &cancelOnLine{match: "net/http streaming 40 req/s", cancel: cancel}
	jsonOut := filepath.Join(t.TempDir(), "bench.json")
	o := Options{rates: []int{20, 40}, duration: 200 * time.Millisecond, tokens: 2, inFlight: 8, vegetaRate: 20, inProcess: true,
		clients: []string{clientReactor, clientNetHTTP}, itlRate: 50, itlDuration: 200 * time.Millisecond, eventsPerWrite: 1, jsonOut: jsonOut}
	var out strings.Builder
	err := runBenchClient(ctx, o, &out, log)
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != 130 || !strings.Contains(err.Error(), "interrupted by SIGINT") {
		t.Fatalf("err = %v, want exit 130 naming the interrupt", err)
	}
	table := out.String()
	for _, want := range []string{"INCOMPLETE (interrupted by SIGINT)",
		"streaming sweep: done; memory per in-flight stream: not run; vegeta comparison: not run; ITL accuracy: not run",
		" 8/8 ", "vegeta comparison: not measured", "≤ 16 KiB per in-flight request: not measured"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	b, err := os.ReadFile(jsonOut)
	if err != nil {
		t.Fatalf("--json-out not written after the interrupt: %v", err)
	}
	var rep benchReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Complete || rep.IncompleteReason != "interrupted by SIGINT" || len(rep.Stream) != 4 || rep.Vegeta != nil || rep.ITL != nil ||
		rep.Clients[0].HeapStackPerInFlight.measured() {
		t.Errorf("--json-out: complete %t reason %q, %d stream rows (want 4), vegeta %v, ITL %v, memory %v: want the sweep only",
			rep.Complete, rep.IncompleteReason, len(rep.Stream), rep.Vegeta, rep.ITL, rep.Clients[0].HeapStackPerInFlight)
	}
}

// TestWriteBenchReportTableFirst: when --json-out cannot be written at the
// end (its directory went away during the run) the table is already on
// stdout and the error names the flag.
func TestWriteBenchReportTableFirst(t *testing.T) {
	t.Parallel()
	o := Options{clients: []string{clientNetHTTP}, inFlight: 8, jsonOut: filepath.Join(t.TempDir(), "gone", "bench.json")}
	rep := newBenchReport(o)
	rep.Complete = true
	var out strings.Builder
	err := writeBenchReport(o, &rep, &out)
	if err == nil || !strings.Contains(err.Error(), "flag --json-out") {
		t.Errorf("err = %v, want the --json-out failure", err)
	}
	if !strings.Contains(out.String(), "side by side") {
		t.Errorf("table not printed before the failed write:\n%s", out.String())
	}
}
