package loadgen

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/transferlab/transferlab/loadgen/loadgentest"
	"github.com/transferlab/transferlab/traces"
)

func TestMain(m *testing.M) {
	if step := os.Getenv(segmentServerEnv); step != "" {
		os.Exit(segmentServerChild(step))
	}
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"))
}

// checkOneStateEach fails unless every scheduled id has exactly one record.
func checkOneStateEach(t *testing.T, s traces.Schedule, recs []Record, sum Summary) {
	t.Helper()
	seen := map[int]int{}
	for _, r := range recs {
		seen[r.RequestID]++
		if r.State == "" {
			t.Errorf("request %d has no state", r.RequestID)
		}
	}
	for _, q := range s.Requests {
		if seen[q.ID] != 1 {
			t.Errorf("request %d has %d records, want exactly 1", q.ID, seen[q.ID])
		}
	}
	total := 0
	for _, n := range sum.States {
		total += n
	}
	if total != len(s.Requests) || len(recs) != len(s.Requests) {
		t.Errorf("states %v sum to %d, records %d, scheduled %d", sum.States, total, len(recs), len(s.Requests))
	}
}

func startFast(t *testing.T, cfg loadgentest.Config) *loadgentest.Server {
	t.Helper()
	srv, err := loadgentest.Start("127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Close(ctx); err != nil {
			t.Errorf("closing the fast server: %v", err)
		}
		if d := srv.Duplicates.Load(); d != 0 {
			t.Errorf("%d request ids arrived twice", d)
		}
		if n := srv.NoUsageAsk.Load(); n != 0 {
			t.Errorf("%d streaming requests did not ask for usage", n)
		}
	})
	return srv
}

func TestReplayEndings(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		srv      loadgentest.Config
		sched    traces.Schedule
		ctxAfter time.Duration // cancel the run after this (0: never)
		opts     []Option
		want     map[State]int
		complete bool
		// cut: the run is cancelled, so how many requests were sent by then
		// depends on the machine's load: want[StateCancelled] is the most
		// (the requests due before the cancel, or the closed loop's
		// workers), every other request ends not_sent, and an open-loop
		// request due after the cancel is never sent.
		cut bool
	}{
		{name: "all ok", srv: loadgentest.Config{ITL: time.Millisecond}, sched: schedule(20, 5*time.Millisecond, 8, 4),
			want: map[State]int{StateOK: 20}, complete: true},
		{name: "per-request timeout", srv: loadgentest.Config{TTFT: 2 * time.Second}, sched: schedule(3, 0, 8, 4),
			opts: []Option{WithTimeout(100 * time.Millisecond)}, want: map[State]int{StateTimeout: 3}, complete: true},
		{name: "run ends: in-flight cancelled, rest not sent", srv: loadgentest.Config{TTFT: 5 * time.Second},
			sched: schedule(10, 100*time.Millisecond, 8, 4), ctxAfter: 250 * time.Millisecond,
			want: map[State]int{StateCancelled: 3, StateNotSent: 7}, cut: true},
		{name: "closed loop", srv: loadgentest.Config{}, sched: schedule(30, time.Hour, 8, 4),
			opts: []Option{WithClosedLoop(3)}, want: map[State]int{StateOK: 30}, complete: true},
		{name: "closed loop cancelled", srv: loadgentest.Config{TTFT: 5 * time.Second}, sched: schedule(30, 0, 8, 4),
			opts: []Option{WithClosedLoop(3)}, ctxAfter: 100 * time.Millisecond,
			want: map[State]int{StateCancelled: 3, StateNotSent: 27}, cut: true},
		{name: "non-streaming chat", srv: loadgentest.Config{}, sched: schedule(5, time.Millisecond, 8, 4),
			opts: []Option{WithStream(false), WithEndpoint(EndpointChat)}, want: map[State]int{StateOK: 5}, complete: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := startFast(t, tc.srv)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.ctxAfter > 0 {
				time.AfterFunc(tc.ctxAfter, cancel)
			}
			var sink SliceSink
			sum, err := Replay(ctx, srv, tc.sched, nil, &sink, tc.opts...)
			if err != nil {
				t.Fatalf("Replay: %v", err)
			}
			checkOneStateEach(t, tc.sched, sink.Records, sum)
			switch {
			case tc.cut:
				n := len(tc.sched.Requests)
				if c := sum.States[StateCancelled]; c > tc.want[StateCancelled] || c+sum.States[StateNotSent] != n {
					t.Errorf("states = %v, want at most %d cancelled, the rest of %d not_sent", sum.States, tc.want[StateCancelled], n)
				}
				for _, r := range sink.Records {
					if tc.ctxAfter > 0 && r.ScheduledAt > tc.ctxAfter && r.State != StateNotSent {
						t.Errorf("request %d due at %v, after the cancel at %v, ended %s", r.RequestID, r.ScheduledAt, tc.ctxAfter, r.State)
					}
				}
			default:
				for _, st := range States {
					if sum.States[st] != tc.want[st] {
						t.Errorf("states = %v, want %v", sum.States, tc.want)
						break
					}
				}
			}
			if sum.Complete != tc.complete || (!sum.Complete && sum.IncompleteReason == "") {
				t.Errorf("complete = %t (%q), want %t", sum.Complete, sum.IncompleteReason, tc.complete)
			}
			for _, r := range sink.Records {
				if r.State == StateOK && (r.OutputTokens != 4 || r.OutputTokensSource != SourceUsage || r.UsageMismatch && tc.opts == nil) {
					t.Errorf("request %d: %d tokens from %s", r.RequestID, r.OutputTokens, r.OutputTokensSource)
				}
				if r.State == StateNotSent && (r.SentAt != 0 || len(r.Events) != 0) {
					t.Errorf("not_sent request %d has a send time or events", r.RequestID)
				}
			}
		})
	}
}

func TestReplayLabelsAndSummary(t *testing.T) {
	t.Parallel()
	srv := startFast(t, loadgentest.Config{})
	var sink SliceSink
	s := schedule(10, 2*time.Millisecond, 8, 3)
	sum, err := Replay(context.Background(), srv, s, nil, &sink, WithArm("cand"), WithOfferedLoad(500), WithRepetition(2))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range sink.Records {
		if r.Arm != "cand" || r.OfferedLoad != 500 || r.Repetition != 2 || r.InputTokens != 8 || r.RequestedOutputTokens != 3 {
			t.Errorf("labels: %+v", r)
		}
		if r.ScheduledAt != s.Requests[r.RequestID].Offset {
			t.Errorf("request %d scheduled at %v, want the trace offset %v", r.RequestID, r.ScheduledAt, s.Requests[r.RequestID].Offset)
		}
		if lag, _ := r.ScheduleLag(); lag < 0 {
			t.Errorf("request %d sent %v before it was due", r.RequestID, -lag)
		}
		if r.PromptTokens != 8 {
			t.Errorf("usage.prompt_tokens = %d, want 8 token ids sent", r.PromptTokens)
		}
	}
	if sum.Scheduled != 10 || sum.Sent != 10 || sum.Mode != "open-loop" || sum.Hist.TTFT.TotalCount() != 10 {
		t.Errorf("summary: %s", sum.String())
	}
	if sum.WindowOutputTokens != 30 || sum.ThroughputTokPerS <= 0 {
		t.Errorf("window tokens %g throughput %g", sum.WindowOutputTokens, sum.ThroughputTokPerS)
	}
}

func TestReplayTextPromptIsVerified(t *testing.T) {
	t.Parallel()
	srv := startFast(t, loadgentest.Config{})
	var sink SliceSink
	sum, err := Replay(context.Background(), srv, schedule(2, 0, 17, 2), nil, &sink, WithPromptText(true))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range sink.Records {
		if r.PromptTokens != 17 || r.PromptMismatch() {
			t.Errorf("prompt tokens %d (mismatch %t), want 17 words", r.PromptTokens, r.PromptMismatch())
		}
	}
	if sum.PromptMismatches != 0 {
		t.Errorf("prompt mismatches %d", sum.PromptMismatches)
	}
}

// failingSink fails on its n-th Add.
type failingSink struct {
	n, adds int
	closed  bool
}

func (f *failingSink) Add(*Record) error {
	f.adds++
	if f.adds == f.n {
		return errors.New("disk full")
	}
	return nil
}
func (f *failingSink) Close() error { f.closed = true; return nil }

func TestReplayInstrumentFailures(t *testing.T) {
	t.Parallel()
	srv := startFast(t, loadgentest.Config{})
	bad := func(mut func(*traces.Request)) traces.Schedule {
		s := schedule(3, time.Millisecond, 8, 4)
		mut(&s.Requests[1])
		return s
	}
	cases := []struct {
		name  string
		sched traces.Schedule
		opts  []Option
		want  string
	}{
		{name: "zero input tokens", sched: bad(func(q *traces.Request) { q.InputTokens = 0 }), want: "field input_tokens"},
		{name: "zero output tokens", sched: bad(func(q *traces.Request) { q.OutputTokens = 0 }), want: "field output_tokens"},
		{name: "unsorted", sched: bad(func(q *traces.Request) { q.Offset = -1 }), want: "field offset"},
		{name: "duplicate id", sched: bad(func(q *traces.Request) { q.ID = 0 }), want: "appears twice"},
		{name: "duplicate huge id (map, not a 2^40-bit set)", sched: func() traces.Schedule {
			s := schedule(3, time.Millisecond, 8, 4)
			s.Requests[0].ID, s.Requests[2].ID = 1<<40, 1<<40
			return s
		}(), want: "appears twice"},
		{name: "bad endpoint", sched: schedule(1, 0, 1, 1), opts: []Option{WithEndpoint("embeddings")}, want: "option endpoint"},
		{name: "cap and closed loop", sched: schedule(1, 0, 1, 1), opts: []Option{WithClosedLoop(2), WithMaxInFlight(2)}, want: "exclude"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var sink SliceSink
			_, err := Replay(context.Background(), srv, tc.sched, nil, &sink, tc.opts...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to name %q", err, tc.want)
			}
			if len(sink.Records) != 0 {
				t.Errorf("records were emitted for an invalid run")
			}
		})
	}
	t.Run("sink failure stops the run", func(t *testing.T) {
		fs := &failingSink{n: 2}
		s := schedule(50, 5*time.Millisecond, 8, 2)
		sum, err := Replay(context.Background(), srv, s, nil, fs)
		if err == nil || !strings.Contains(err.Error(), "disk full") || sum.Complete || !fs.closed {
			t.Errorf("err %v complete %t closed %t", err, sum.Complete, fs.closed)
		}
		if sum.States[StateNotSent] == 0 {
			t.Errorf("the run went on after the sink failed: %v", sum.States)
		}
	})
	t.Run("server not ready", func(t *testing.T) {
		var sink SliceSink
		s := schedule(4, 0, 8, 2)
		sum, err := Replay(context.Background(), notReady{}, s, nil, &sink)
		if err == nil || sum.States[StateNotSent] != 4 || len(sink.Records) != 4 {
			t.Errorf("err %v states %v", err, sum.States)
		}
	})
}

type notReady struct{}

func (notReady) BaseURL() string                 { return "http://127.0.0.1:1" }
func (notReady) Ready(ctx context.Context) error { return errors.New("connection refused") }

// countingPacer wraps a pacer and stops after n hits.
type countingPacer struct {
	Pacer
	n     uint64
	calls atomic.Int64
}

func (c *countingPacer) Pace(e time.Duration, hits uint64) (time.Duration, bool) {
	c.calls.Add(1)
	if hits >= c.n {
		return 0, true
	}
	return c.Pacer.Pace(e, hits)
}

func TestPacerStopLeavesRestNotSent(t *testing.T) {
	t.Parallel()
	srv := startFast(t, loadgentest.Config{})
	s := schedule(10, time.Millisecond, 8, 2)
	var sink SliceSink
	p := &countingPacer{Pacer: NewTracePacer(s), n: 6}
	sum, err := Replay(context.Background(), srv, s, p, &sink)
	if err != nil {
		t.Fatal(err)
	}
	checkOneStateEach(t, s, sink.Records, sum)
	if sum.States[StateOK] != 6 || sum.States[StateNotSent] != 4 {
		t.Errorf("states %v", sum.States)
	}
}
