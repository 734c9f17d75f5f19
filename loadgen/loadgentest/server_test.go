package loadgentest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if impl := os.Getenv(benchChildEnv); impl != "" {
		os.Exit(benchChild(impl))
	}
	goleak.VerifyTestMain(m)
}

// startT starts a server for t and closes it (within 5 s) when t ends.
func startT(t *testing.T, cfg Config) *Server {
	t.Helper()
	s, err := Start("127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeT(t, s, 5*time.Second) })
	return s
}

// closeT closes s within d and fails t if it did not finish in time.
func closeT(t *testing.T, s *Server, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// dial opens a raw connection to s.
func dial(t *testing.T, base string) (net.Conn, *bufio.Reader) {
	t.Helper()
	nc, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(20 * time.Second)) // a hung test fails, not hangs
	return nc, bufio.NewReader(nc)
}

// post is a raw POST of body to path with extra header lines (each ending "\r\n").
func post(path, headers, body string) string {
	return "POST " + path + " HTTP/1.1\r\nHost: x\r\n" + headers + "Content-Length: " + itoa(len(body)) + "\r\n\r\n" + body
}

// post10 is a raw HTTP/1.0 POST of body to /v1/completions with extra header lines.
func post10(headers, body string) string {
	return "POST /v1/completions HTTP/1.0\r\n" + headers + "Content-Length: " + itoa(len(body)) + "\r\n\r\n" + body
}

func itoa(n int) string { return strconv.Itoa(n) }

// readResp reads one response and its whole body.
func readResp(t *testing.T, br *bufio.Reader) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the body: %v", err)
	}
	return resp, string(b)
}

// answer is what a client sees of one response.
type answer struct {
	status      int
	contentType string
	body        string
}

func ask(t *testing.T, base, path, body string, hdr map[string]string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST %s body: %v", path, err)
	}
	return answer{resp.StatusCode, resp.Header.Get("Content-Type"), string(b)}
}

// TestSameAnswersAsNetHTTP: for every kind of request the raw server's
// status, content type and (de-chunked) body bytes equal those of the
// net/http server it replaced; bad requests get the same status and now a
// body that parses as JSON with an error message.
func TestSameAnswersAsNetHTTP(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{{}, {Tokens: 3}, {TTFT: time.Millisecond, ITL: time.Millisecond},
		{EventsPerWrite: 8}, {Tokens: 20, EventsPerWrite: 3}, {ITL: time.Millisecond, EventsPerWrite: 4}} {
		raw := startT(t, cfg)
		ref, err := startNetHTTP("127.0.0.1:0", cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ref.Close(context.Background()) })
		cases := []struct {
			name, path, body string
			bad              bool
		}{
			{name: "stream usage ids", path: "/v1/completions", body: `{"max_tokens":5,"stream":true,"stream_options":{"include_usage":true},"prompt":[1,2,3]}`},
			{name: "stream no usage text", path: "/v1/completions", body: `{"max_tokens":2,"stream":true,"prompt":"one two  three"}`},
			{name: "chat stream usage", path: "/v1/chat/completions", body: `{"max_tokens":4,"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`},
			{name: "chat stream one token", path: "/v1/chat/completions", body: `{"max_tokens":1,"stream":true}`},
			{name: "whole", path: "/v1/completions", body: `{"max_tokens":7,"prompt":[[1,2],[3]]}`},
			{name: "whole chat", path: "/v1/chat/completions", body: `{"max_tokens":7,"messages":[]}`},
			{name: "whole empty prompt", path: "/v1/completions", body: `{"max_tokens":2,"prompt":[ ]}`},
			{name: "bad JSON", path: "/v1/completions", body: `{"max_tokens":`, bad: true},
			{name: "empty body", path: "/v1/completions", body: ``, bad: true},
			{name: "no max_tokens", path: "/v1/chat/completions", body: `{"stream":true}`, bad: cfg.Tokens == 0},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				got := ask(t, raw.BaseURL(), tc.path, tc.body, nil)
				want := ask(t, ref.BaseURL(), tc.path, tc.body, nil)
				if got.status != want.status {
					t.Fatalf("status %d, net/http said %d", got.status, want.status)
				}
				if tc.bad {
					var e struct{ Error struct{ Message string } }
					if got.status != http.StatusBadRequest || json.Unmarshal([]byte(got.body), &e) != nil || e.Error.Message == "" {
						t.Errorf("bad request: %d %q, want 400 with a JSON error message", got.status, got.body)
					}
					return
				}
				if got != want {
					t.Errorf("got %+v\nnet/http said %+v", got, want)
				}
			})
		}
	}
}

// TestProtocol drives the server over raw connections: framing,
// keep-alive, HTTP/1.0, Connection: close, Expect: 100-continue, chunked
// request bodies, pipelining and the error statuses.
func TestProtocol(t *testing.T) {
	t.Parallel()
	s := startT(t, Config{})
	whole := `{"max_tokens":2,"prompt":[1]}`
	wholeBody := `{"id":"x","choices":[{"index":0,"text":" tok","finish_reason":"length"}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`
	type step struct {
		status int
		body   string // "" checks nothing
		closes bool   // the server closes the connection after this response
	}
	cases := []struct {
		name  string
		send  string
		then  string // sent after the first response
		steps []step
	}{
		{name: "keep-alive: two requests, one connection",
			send:  post("/v1/completions", "", whole) + post("/v1/completions", "", whole),
			steps: []step{{200, wholeBody, false}, {200, wholeBody, false}}},
		{name: "Connection: close is honoured",
			send:  post("/v1/completions", "Connection: close\r\n", whole),
			steps: []step{{200, wholeBody, true}}},
		{name: "HTTP/1.0 closes",
			send:  post10("", whole),
			steps: []step{{200, wholeBody, true}}},
		{name: "HTTP/1.0 keep-alive asked",
			send:  post10("Connection: keep-alive\r\n", whole),
			steps: []step{{200, wholeBody, false}}},
		{name: "HTTP/1.0 stream: unframed, ends at close",
			send:  post10("Connection: keep-alive\r\n", `{"max_tokens":1,"stream":true}`),
			steps: []step{{200, string(compEvent.raw) + string(doneEvent.raw), true}}},
		{name: "Expect: 100-continue",
			send:  "POST /v1/completions HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: " + itoa(len(whole)) + "\r\n\r\n",
			then:  whole,
			steps: []step{{100, "", false}, {200, wholeBody, false}}},
		{name: "chunked request body with a trailer",
			send:  "POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"max\r\n18\r\n_tokens\":2,\"prompt\":[1]}\r\n0\r\nX-T: 1\r\n\r\n" + post("/v1/completions", "", whole),
			steps: []step{{200, wholeBody, false}, {200, wholeBody, false}}},
		{name: "query string and absolute form",
			send:  "POST http://x/v1/completions?a=b HTTP/1.1\r\nContent-Length: " + itoa(len(whole)) + "\r\n\r\n" + whole,
			steps: []step{{200, wholeBody, false}}},
		{name: "health GET and HEAD",
			send:  "GET /health HTTP/1.1\r\n\r\nHEAD /health HTTP/1.1\r\n\r\n",
			steps: []step{{200, "", false}, {200, "", false}}},
		{name: "not found keeps the connection",
			send:  post("/v1/embeddings", "", whole) + post("/v1/completions", "", whole),
			steps: []step{{404, "", false}, {200, wholeBody, false}}},
		{name: "wrong method",
			send:  "GET /v1/chat/completions HTTP/1.1\r\n\r\n",
			steps: []step{{405, "", false}}},
		{name: "malformed request line",
			send:  "POST/v1/completions\r\n\r\n",
			steps: []step{{400, "", true}}},
		{name: "HTTP/2 preface refused",
			send:  "PRI * HTTP/2.0\r\n\r\n",
			steps: []step{{505, "", true}}},
		{name: "malformed header",
			send:  "POST /v1/completions HTTP/1.1\r\nNo colon here\r\n\r\n",
			steps: []step{{400, "", true}}},
		{name: "conflicting Content-Length",
			send:  "POST /v1/completions HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
			steps: []step{{400, "", true}}},
		{name: "signed Content-Length",
			send:  "POST /v1/completions HTTP/1.1\r\nContent-Length: +1\r\n\r\n",
			steps: []step{{400, "", true}}},
		{name: "body too large",
			send:  "POST /v1/completions HTTP/1.1\r\nContent-Length: 999999999999\r\n\r\n",
			steps: []step{{413, "", true}}},
		{name: "body too large, its bytes sent",
			send:  "POST /v1/completions HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n" + strings.Repeat("x", 200<<10),
			steps: []step{{413, "", true}}},
		{name: "unknown transfer coding",
			send:  "POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n",
			steps: []step{{501, "", true}}},
		{name: "unknown expectation",
			send:  "POST /v1/completions HTTP/1.1\r\nExpect: magic\r\n\r\n",
			steps: []step{{417, "", true}}},
		{name: "head too large",
			send:  "POST /v1/completions HTTP/1.1\r\nX-Big: " + strings.Repeat("a", maxHeadBytes) + "\r\n\r\n",
			steps: []step{{431, "", true}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			nc, br := dial(t, s.BaseURL())
			go func() { _, _ = io.WriteString(nc, tc.send) }() // a refused huge head is not all read
			for i, st := range tc.steps {
				resp, body := readResp(t, br)
				if resp.StatusCode != st.status || (st.body != "" && body != st.body) {
					t.Fatalf("response %d: %d %q, want %d %q", i, resp.StatusCode, body, st.status, st.body)
				}
				if st.status >= 400 && resp.Header.Get("Content-Type") != "application/json" {
					t.Errorf("response %d: error content type %q", i, resp.Header.Get("Content-Type"))
				}
				if st.status == 405 && resp.Header.Get("Allow") == "" {
					t.Errorf("405 without Allow")
				}
				if got := resp.Close; got != st.closes && st.status != 100 {
					t.Errorf("response %d: Connection: close %t, want %t", i, got, st.closes)
				}
				if i == 0 && tc.then != "" {
					if _, err := io.WriteString(nc, tc.then); err != nil {
						t.Fatal(err)
					}
				}
			}
			// A closing server ends the connection within 10 s (a loaded
			// machine is slow, never that slow); one keeping it open sends
			// nothing more and has not closed it 50 ms on (this check cannot
			// fail falsely; a server closing later would pass it).
			last := tc.steps[len(tc.steps)-1]
			wait := 50 * time.Millisecond
			if last.closes {
				wait = 10 * time.Second
			}
			_ = nc.SetReadDeadline(time.Now().Add(wait))
			_, err := br.ReadByte()
			var ne net.Error
			timedOut := errors.As(err, &ne) && ne.Timeout()
			if last.closes && (err == nil || timedOut) {
				t.Errorf("after the last response: %v, want the connection closed", err)
			}
			if !last.closes && !timedOut {
				t.Errorf("after the last response: %v, want the connection kept open", err)
			}
		})
	}
}

// TestCounters checks Requests, Duplicates, NoUsageAsk and Events against
// the requests sent, with token events written one or three to a Write.
func TestCounters(t *testing.T) {
	t.Parallel()
	for _, g := range []int{1, 3} {
		t.Run(fmt.Sprintf("EventsPerWrite %d", g), func(t *testing.T) { testCounters(t, g) })
	}
}

func testCounters(t *testing.T, eventsPerWrite int) {
	t.Parallel()
	s := startT(t, Config{Tokens: 4, EventsPerWrite: eventsPerWrite})
	id := map[string]string{"X-Request-Id": "7"}
	ask(t, s.BaseURL(), "/v1/completions", `{"stream":true,"stream_options":{"include_usage":true}}`, id)
	ask(t, s.BaseURL(), "/v1/chat/completions", `{"stream":true}`, id)
	ask(t, s.BaseURL(), "/v1/completions", `{}`, map[string]string{"X-Request-Id": "8"})
	ask(t, s.BaseURL(), "/v1/completions", `nope`, nil)
	for name, c := range map[string]struct{ got, want int64 }{
		"Requests":   {s.Requests.Load(), 4},
		"Duplicates": {s.Duplicates.Load(), 1},
		"NoUsageAsk": {s.NoUsageAsk.Load(), 1},
		"Events":     {s.Events.Load(), 4 + 4 + 1},
		"Open":       {s.Open.Load(), 0},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", name, c.got, c.want)
		}
	}
}

// streamReq starts a streaming request on a raw connection and reads its head.
func streamReq(t *testing.T, s *Server, tokens int) (net.Conn, *bufio.Reader) {
	t.Helper()
	nc, br := dial(t, s.BaseURL())
	if _, err := io.WriteString(nc, post("/v1/completions", "", `{"max_tokens":`+itoa(tokens)+`,"stream":true}`)); err != nil {
		t.Fatal(err)
	}
	return nc, br
}

// TestHoldAndClose: with Hold, a stream stops after its first event (Open
// counts it) until Hold is closed; Close lets streams finish, and cuts
// them when its ctx ends first.
func TestHoldAndClose(t *testing.T) {
	t.Parallel()
	t.Run("hold then release", func(t *testing.T) {
		t.Parallel()
		hold := make(chan struct{})
		s := startT(t, Config{Hold: hold})
		_, br := streamReq(t, s, 3)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		first := make([]byte, len(compEvent.raw))
		if _, err := io.ReadFull(resp.Body, first); err != nil || !bytes.Equal(first, compEvent.raw) {
			t.Fatalf("first event %q: %v", first, err)
		}
		if o := s.Open.Load(); o != 1 {
			t.Errorf("Open = %d while held, want 1", o)
		}
		close(hold)
		rest, err := io.ReadAll(resp.Body)
		if want := strings.Repeat(string(compEvent.raw), 2) + string(doneEvent.raw); err != nil || string(rest) != want {
			t.Errorf("after release: %q (%v), want %q", rest, err, want)
		}
	})
	t.Run("close lets a stream finish", func(t *testing.T) {
		t.Parallel()
		s, err := Start("127.0.0.1:0", Config{ITL: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		_, br := streamReq(t, s, 10)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		closed := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			closed <- s.Close(ctx)
		}()
		body, err := io.ReadAll(resp.Body)
		if err != nil || strings.Count(string(body), "data: ") != 11 {
			t.Errorf("stream during Close: %d events (%v), want 10 tokens and [DONE]", strings.Count(string(body), "data: "), err)
		}
		if err := <-closed; err != nil {
			t.Errorf("Close: %v", err)
		}
		if _, err := net.Dial("tcp", strings.TrimPrefix(s.BaseURL(), "http://")); err == nil {
			t.Errorf("dial after Close succeeded")
		}
	})
	t.Run("close cuts held streams at its deadline", func(t *testing.T) {
		t.Parallel()
		s, err := Start("127.0.0.1:0", Config{Hold: make(chan struct{})})
		if err != nil {
			t.Fatal(err)
		}
		_, br := streamReq(t, s, 3)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if err := s.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Close = %v, want the deadline", err)
		}
		if _, err := io.ReadAll(resp.Body); err == nil {
			t.Errorf("cut stream ended cleanly")
		}
		if o := s.Open.Load(); o != 0 {
			t.Errorf("Open = %d after Close, want 0", o)
		}
	})
}

// TestHangUpEndsWaits: a client that goes away during the TTFT wait or the
// hold frees its connection at once (Close then has nothing to wait for).
func TestHangUpEndsWaits(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{{TTFT: time.Hour}, {Hold: make(chan struct{})}, {ITL: time.Hour}} {
		s, err := Start("127.0.0.1:0", cfg)
		if err != nil {
			t.Fatal(err)
		}
		nc, br := streamReq(t, s, 3)
		if cfg.TTFT == 0 {
			if _, err := http.ReadResponse(br, nil); err != nil {
				t.Fatal(err)
			}
		}
		_ = nc.Close()
		closeT(t, s, 5*time.Second)
	}
}

// TestHeadTimeout: a client that sends part of a head and stalls is cut off.
func TestHeadTimeout(t *testing.T) {
	t.Parallel()
	s, err := start("127.0.0.1:0", Config{}, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeT(t, s, 5*time.Second) })
	nc, br := dial(t, s.BaseURL())
	if _, err := io.WriteString(nc, "POST /v1/completions HTTP/1.1\r\nHost: x\r\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Errorf("stalled head: read %v, want the server to close (EOF)", err)
	}
}

// TestStartRefuses: a listen failure names the address; a bad
// EventsPerWrite names the field.
func TestStartRefuses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		addr string
		cfg  Config
		want string
	}{
		{addr: "256.0.0.1:0", want: "256.0.0.1:0"},
		{addr: "127.0.0.1:0", cfg: Config{EventsPerWrite: -1}, want: "EventsPerWrite -1"},
		{addr: "127.0.0.1:0", cfg: Config{EventsPerWrite: maxEventsPerWrite + 1}, want: "EventsPerWrite"},
	}
	for _, tc := range cases {
		if _, err := Start(tc.addr, tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Start(%q, %+v) = %v, want an error naming %q", tc.addr, tc.cfg, err, tc.want)
		}
	}
}

// TestEventsPerWriteHTTP10: grouped events are unframed for an HTTP/1.0
// client, and a stream shorter than a group is whole.
func TestEventsPerWriteHTTP10(t *testing.T) {
	t.Parallel()
	s := startT(t, Config{EventsPerWrite: 3})
	for _, n := range []int{1, 2, 5, 7} {
		nc, br := dial(t, s.BaseURL())
		if _, err := io.WriteString(nc, post10("", `{"stream":true,"max_tokens":`+itoa(n)+`}`)); err != nil {
			t.Fatal(err)
		}
		_, body := readResp(t, br)
		if want := strings.Repeat(string(compEvent.raw), n) + string(doneEvent.raw); body != want {
			t.Errorf("%d tokens: %q, want %q", n, body, want)
		}
	}
}
