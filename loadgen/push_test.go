package loadgen

import (
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
