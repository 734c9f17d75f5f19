package loadgen

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/quick"
	"time"
)

func ms(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }

func TestRecordMetrics(t *testing.T) {
	t.Parallel()
	ev := func(at float64, reasoning bool) TokenEvent {
		return TokenEvent{At: ms(at), Tokens: 1, Reasoning: reasoning}
	}
	cases := []struct {
		name                         string
		r                            Record
		ttft, ttftI, ttfo, e2e, tpot time.Duration // -1: undefined
		itls                         []time.Duration
		lag                          time.Duration
	}{
		{name: "three tokens",
			r:    Record{State: StateOK, ScheduledAt: ms(10), SentAt: ms(12), Events: []TokenEvent{ev(112, false), ev(122, false), ev(142, false)}, EndAt: ms(143), OutputTokens: 3},
			ttft: ms(100), ttftI: ms(102), ttfo: ms(100), e2e: ms(131), tpot: ms(15.5), itls: []time.Duration{ms(10), ms(20)}, lag: ms(2)},
		{name: "reasoning first: TTFO apart",
			r:    Record{State: StateOK, SentAt: ms(0), Events: []TokenEvent{ev(50, true), ev(2050, false)}, EndAt: ms(2050), OutputTokens: 2},
			ttft: ms(50), ttftI: ms(50), ttfo: ms(2050), e2e: ms(2050), tpot: ms(2000), itls: []time.Duration{ms(2000)}},
		{name: "one token: TPOT undefined",
			r:    Record{State: StateOK, SentAt: ms(1), Events: []TokenEvent{ev(11, false)}, EndAt: ms(12), OutputTokens: 1},
			ttft: ms(10), ttftI: ms(11), ttfo: ms(10), e2e: ms(11), tpot: -1, lag: ms(1)},
		{name: "multi-token event: usage counts tokens, gaps count events",
			r:    Record{State: StateOK, SentAt: 0, Events: []TokenEvent{{At: ms(10), Tokens: 1}, {At: ms(20), Tokens: 4}}, EndAt: ms(20), OutputTokens: 5},
			ttft: ms(10), ttftI: ms(10), ttfo: ms(10), e2e: ms(20), tpot: ms(2.5), itls: []time.Duration{ms(10)}},
		{name: "not sent: nothing defined",
			r:    Record{State: StateNotSent, ScheduledAt: ms(5)},
			ttft: -1, ttftI: -1, ttfo: -1, e2e: -1, tpot: -1, lag: -1},
		{name: "cut stream: TTFT defined, E2E and TPOT not",
			r:    Record{State: StateStreamError, SentAt: 0, Events: []TokenEvent{ev(5, false), ev(9, false)}, OutputTokens: 2},
			ttft: ms(5), ttftI: ms(5), ttfo: ms(5), e2e: -1, tpot: -1, itls: []time.Duration{ms(4)}},
	}
	check := func(t *testing.T, r *Record, name string, m Metric, got time.Duration, ok bool, want time.Duration) {
		t.Helper()
		if want < 0 {
			if ok || r.Undefined(m) == "" {
				t.Errorf("%s = %v, %t; want undefined with a reason (got %q)", name, got, ok, r.Undefined(m))
			}
			return
		}
		if !ok || got != want || r.Undefined(m) != "" {
			t.Errorf("%s = %v, %t (%q); want %v", name, got, ok, r.Undefined(m), want)
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &tc.r
			d, ok := r.TTFT()
			check(t, r, "TTFT", MetricTTFT, d, ok, tc.ttft)
			d, ok = r.TTFTIntended()
			check(t, r, "TTFT (intended)", MetricTTFTIntended, d, ok, tc.ttftI)
			d, ok = r.TTFO()
			check(t, r, "TTFO", MetricTTFO, d, ok, tc.ttfo)
			d, ok = r.E2E()
			check(t, r, "E2E", MetricE2E, d, ok, tc.e2e)
			d, ok = r.TPOT()
			check(t, r, "TPOT", MetricTPOT, d, ok, tc.tpot)
			d, ok = r.ScheduleLag()
			check(t, r, "schedule lag", MetricScheduleLag, d, ok, tc.lag)
			if got := r.ITLs(); !reflect.DeepEqual(got, tc.itls) {
				t.Errorf("ITLs = %v, want %v", got, tc.itls)
			}
		})
	}
}

func TestJSONLRoundTrip(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "records.jsonl")
	sink, err := CreateJSONL(path)
	if err != nil {
		t.Fatal(err)
	}
	recs := []Record{
		{RequestID: 1, Arm: "baseline", OfferedLoad: 2.5, State: StateOK, SentAt: ms(3), Events: []TokenEvent{{At: ms(9), Tokens: 1, Reasoning: true}}, EndAt: ms(10), OutputTokens: 1, OutputTokensSource: SourceUsage, FinishReason: "length"},
		{RequestID: 2, State: StateNotSent, ScheduledAt: ms(50), Events: []TokenEvent{}},
	}
	for i := range recs {
		if err := sink.Add(&recs[i]); err != nil {
			t.Fatal(err)
		}
		// Written as each request ends: the line is in the file before Close.
		b, _ := os.ReadFile(path)
		if n := bytes.Count(b, []byte("\n")); n != i+1 {
			t.Fatalf("after %d adds the file has %d lines", i+1, n)
		}
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(path)
	defer f.Close()
	got, err := ReadRecords(f)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, recs) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, recs)
	}
}

func TestReadRecordsErrors(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, in, want string }{
		{"bad JSON names the line", `{"request_id":1,"state":"ok"}` + "\n\n" + `{"request_id":2,` + "\n", "line 3"},
		{"unknown state names the field", `{"request_id":1,"state":"weird"}` + "\n", "line 1: field state"},
		{"wrong type", `{"request_id":"x","state":"ok"}` + "\n", "line 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadRecords(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// Property: any record survives JSON encoding unchanged.
func TestRecordJSONProperty(t *testing.T) {
	t.Parallel()
	f := func(id int, at []int64, out int, st uint8) bool {
		r := Record{RequestID: id, OutputTokens: out, State: States[int(st)%len(States)], Events: []TokenEvent{}}
		for _, a := range at {
			r.Events = append(r.Events, TokenEvent{At: time.Duration(a), Tokens: 1})
		}
		var buf bytes.Buffer
		if err := NewJSONLSink(&buf).Add(&r); err != nil {
			return false
		}
		got, err := ReadRecords(&buf)
		if err != nil || len(got) != 1 {
			return false
		}
		b1, _ := json.Marshal(r)
		b2, _ := json.Marshal(got[0])
		return bytes.Equal(b1, b2)
	}
	if err := quick.Check(f, nil); err != nil {
		t.Error(err)
	}
}

func TestMultiSinkAndHistograms(t *testing.T) {
	t.Parallel()
	var a, b SliceSink
	h := NewHistograms()
	m := MultiSink(&a, &b, h)
	r := Record{State: StateOK, SentAt: 0, Events: []TokenEvent{{At: ms(10), Tokens: 1}, {At: ms(30), Tokens: 1}}, EndAt: ms(30), OutputTokens: 2}
	w := Record{State: StateOK, Warmup: true, Events: []TokenEvent{{At: ms(1), Tokens: 1}}, EndAt: ms(1), OutputTokens: 1}
	for _, x := range []*Record{&r, &w} {
		if err := m.Add(x); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if len(a.Records) != 2 || len(b.Records) != 2 {
		t.Errorf("slice sinks got %d and %d records", len(a.Records), len(b.Records))
	}
	if h.TTFT.TotalCount() != 1 || h.ITL.TotalCount() != 1 || h.ScheduleLag.TotalCount() != 2 {
		t.Errorf("histograms: TTFT %d ITL %d lag %d (warm-up must be excluded from latencies)", h.TTFT.TotalCount(), h.ITL.TotalCount(), h.ScheduleLag.TotalCount())
	}
	if got := time.Duration(h.ITL.ValueAtQuantile(50)) * time.Microsecond; got < ms(19.9) || got > ms(20.1) {
		t.Errorf("ITL p50 %v, want 20 ms at 3 significant digits", got)
	}
	h2 := NewHistograms()
	if dropped := h2.Merge(h); dropped != 0 || h2.TTFT.TotalCount() != 1 {
		t.Errorf("merge dropped %d", dropped)
	}
}
