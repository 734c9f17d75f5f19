package loadgen

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPushResponseSplits feeds each framing byte by byte and in one piece:
// the record must not depend on how the bytes were cut.
func TestPushResponseSplits(t *testing.T) {
	t.Parallel()
	chunked := func(parts ...string) string {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(strconv.FormatInt(int64(len(p)), 16) + "\r\n" + p + "\r\n")
		}
		return b.String() + "0\r\nX-Trailer: a\r\n\r\n"
	}
	e1 := "data: {\"choices\":[{\"text\":\"a\"}]}\r\n\r\n"
	e2 := "data: {\"choices\":[{\"text\":\"b\",\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":2}}\n\n"
	cases := []struct {
		name, raw string
		state     State
		events    int
		reusable  bool
	}{
		{"chunked with extension and trailer", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
			strings.Replace(chunked(e1, e2, "data: [DONE]\n\n"), "\r\n", ";ext=1\r\n", 1), StateOK, 2, true},
		{"content-length", "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: " + strconv.Itoa(len(e1+e2)) + "\r\n\r\n" + e1 + e2, StateOK, 2, true},
		{"LF-only head", "HTTP/1.1 200 OK\nContent-Type: text/event-stream\nContent-Length: " + strconv.Itoa(len(e1+e2)) + "\n\n" + e1 + e2, StateOK, 2, true},
		{"error body", "HTTP/1.1 429 Too Many Requests\r\nContent-Length: 29\r\n\r\n{\"error\":{\"message\":\"slow\"}}\n", StateHTTPError, 0, true},
		{"connection close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked(e1+e2), StateOK, 2, false},
		{"bad chunk size", "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n" + e1, StateStreamError, 0, false},
		{"bytes after the body", "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: " + strconv.Itoa(len(e1+e2)) + "\r\n\r\n" + e1 + e2 + "junk", StateOK, 2, false},
	}
	for _, tc := range cases {
		for _, step := range []int{1, 3, 7, len(tc.raw)} {
			cfg := defaultConfig()
			c := &client{cfg: &cfg, url: "http://x/v1/completions", since: func() time.Duration { return time.Millisecond }}
			var rec Record
			rs := reqState{runCtx: context.Background()}
			var r pushResponse
			r.init(c, &rs, &rec)
			for i := 0; i < len(tc.raw); i += step {
				r.feed([]byte(tc.raw[i:min(len(tc.raw), i+step)]), time.Duration(i+1))
			}
			if !r.ended() {
				r.eof(time.Duration(len(tc.raw) + 1))
			}
			if rec.State != tc.state || len(rec.Events) != tc.events || r.reusable() != tc.reusable {
				t.Errorf("%s, %d-byte pieces: state %s (%q), %d events, reusable %t; want %s, %d, %t",
					tc.name, step, rec.State, rec.Error, len(rec.Events), r.reusable(), tc.state, tc.events, tc.reusable)
			}
			if tc.state == StateOK && rec.OutputTokens != 2 {
				t.Errorf("%s, %d-byte pieces: %d output tokens, want 2", tc.name, step, rec.OutputTokens)
			}
		}
	}
}

// TestLongDataLineSpreadOverReads: a response carrying one 1 MiB data event
// (a chunk whose text fills it), fed as the reactor reads it, 64 KiB at a
// time. The reader's work (bytes copied or decoded, each read's own
// included) on any one read stays within a few times the read's size, so
// no read holds up the loop, and so the other streams' stamps, for the
// whole line (before, the read carrying the line's end copied and decoded
// all of it: 2.1 MB of work for a 64 KiB read). The record is the one the
// response gives fed whole.
func TestLongDataLineSpreadOverReads(t *testing.T) {
	t.Parallel()
	const read = 64 << 10
	raw := longDataResponse(1 << 20)
	cfg := defaultConfig()
	c := &client{cfg: &cfg, url: "http://x/v1/completions", since: func() time.Duration { return 0 }}
	run := func(step int) (Record, int64) {
		var rec Record
		rs := reqState{runCtx: context.Background()}
		var r pushResponse
		r.init(c, &rs, &rec)
		var worst, last int64
		for i := 0; i < len(raw); i += step {
			r.feed(raw[i:min(len(raw), i+step)], time.Duration(i/step+1))
			if r.st != nil {
				worst, last = max(worst, r.st.sse.work-last), r.st.sse.work
			}
		}
		if !r.ended() {
			r.eof(time.Duration(len(raw)))
		}
		return rec, worst
	}
	whole, _ := run(len(raw))
	rec, worst := run(read)
	if limit := int64(4 * read); worst > limit {
		t.Errorf("one %d-byte read cost the reader %d bytes of work (copied or decoded), over %d: the long line is handled in one step", read, worst, limit)
	}
	if rec.State != StateOK || len(rec.Events) != 3 || rec.OutputTokens != 3 || rec.UsageMismatch {
		t.Fatalf("state %s (%q), %d events, %d tokens, usage mismatch %t; want ok, 3, 3, false", rec.State, rec.Error, len(rec.Events), rec.OutputTokens, rec.UsageMismatch)
	}
	for k := range rec.Events {
		if rec.Events[k].Tokens != whole.Events[k].Tokens || rec.Events[k].Reasoning != whole.Events[k].Reasoning {
			t.Errorf("event %d: %+v, fed whole %+v", k, rec.Events[k], whole.Events[k])
		}
	}
	// Stamped by the read that carried the blank line ending the event.
	end := bytes.Index(raw, []byte(`"finish_reason":null}]}`+"\n\n")) + len(`"finish_reason":null}]}`+"\n\n") - 1
	if want := time.Duration(end/read + 1); rec.Events[1].At != want {
		t.Errorf("long event stamped %v, want %v (the read holding its end)", rec.Events[1].At, want)
	}
}
