package loadgen

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/transferlab/transferlab/traces"
)

// TestEveryFinalStateHasATime: records that end ok, with an HTTP error, a
// timeout or a cancellation all say when they reached that state
// (final_at_ns), on the run's clock, no earlier than they were sent; an ok
// record's is its EndAt.
func TestEveryFinalStateHasATime(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Header.Get(RequestIDHeader) {
		case "0":
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte("data: {\"choices\":[{\"text\":\"a\",\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n"))
		case "1":
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
		default: // a stall past the client's timeout
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}
	}))
	defer srv.Close()
	s := traces.Schedule{Source: "t", Requests: []traces.Request{
		{ID: 0, InputTokens: 1, OutputTokens: 1},
		{ID: 1, Offset: time.Millisecond, InputTokens: 1, OutputTokens: 1},
		{ID: 2, Offset: 2 * time.Millisecond, InputTokens: 1, OutputTokens: 1},
	}}
	out := &SliceSink{}
	if _, err := Replay(context.Background(), urlServer{srv.URL}, s, NewTracePacer(s), out, WithTimeout(300*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	states := map[State]bool{}
	for _, r := range out.Records {
		states[r.State] = true
		if r.FinalAt <= 0 || r.FinalAt < r.SentAt {
			t.Errorf("request %d (%s): final_at %v, sent at %v", r.RequestID, r.State, r.FinalAt, r.SentAt)
		}
		if r.State == StateOK && r.FinalAt != r.EndAt {
			t.Errorf("ok request %d: final_at %v != end_at %v", r.RequestID, r.FinalAt, r.EndAt)
		}
		// The timeout runs from dispatch (the request's deadline is set when
		// the client takes it, before a connection is dialled and the first
		// byte is sent), so it is measured from DispatchedAt, not SentAt.
		if r.State == StateTimeout && r.FinalAt-r.DispatchedAt < 300*time.Millisecond {
			t.Errorf("timed-out request %d ended %v after it was dispatched, before the 300 ms timeout", r.RequestID, r.FinalAt-r.DispatchedAt)
		}
	}
	if !states[StateOK] || !states[StateHTTPError] || !states[StateTimeout] {
		t.Errorf("states %v: want ok, http_error and timeout", states)
	}
}
