package loadgen

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

func TestTracePacer(t *testing.T) {
	t.Parallel()
	s := schedule(4, 10*time.Millisecond, 1, 1)
	p := NewTracePacer(s)
	cases := []struct {
		name    string
		elapsed time.Duration
		hits    uint64
		wait    time.Duration
		stop    bool
	}{
		{"first request at its offset", 0, 0, 0, false},
		{"waits until the offset", 5 * time.Millisecond, 1, 5 * time.Millisecond, false},
		{"late: negative wait keeps the intended time", 35 * time.Millisecond, 2, -15 * time.Millisecond, false},
		{"stops after the last request", time.Second, 4, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, st := p.Pace(tc.elapsed, tc.hits)
			if w != tc.wait || st != tc.stop {
				t.Errorf("Pace(%v, %d) = %v, %t; want %v, %t", tc.elapsed, tc.hits, w, st, tc.wait, tc.stop)
			}
		})
	}
	if r := p.Rate(15 * time.Millisecond); r != 4 {
		t.Errorf("Rate = %g req/s in the 1 s window, want 4", r)
	}
}

// TestReplayVegetaPacer: vegeta's ConstantPacer drives Replay unchanged: every
// request is sent, none before vegeta's due time for it ((i+1)/rate s from
// the start; vegeta sends a late hit at once, which is later still).
func TestReplayVegetaPacer(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, sseTwoTokens)
	}))
	t.Cleanup(srv.Close)
	const n, rate = 20, 200
	var sink SliceSink
	p := vegeta.ConstantPacer{Freq: rate, Per: time.Second}
	sum, err := Replay(context.Background(), urlServer{srv.URL}, schedule(n, 0, 4, 2), p, &sink)
	if err != nil || sum.States[StateOK] != n || len(sink.Records) != n {
		t.Fatalf("err %v, states %v, %d records", err, sum.States, len(sink.Records))
	}
	for _, r := range sink.Records {
		if due := time.Duration(r.RequestID+1) * time.Second / rate; r.ScheduledAt < due {
			t.Errorf("request %d scheduled at %v, before vegeta's due time %v", r.RequestID, r.ScheduledAt, due)
		}
	}
}
