package loadgen

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// clientCase is one transport a test case goes through.
type clientCase struct {
	name string
	opt  Option
}

// clientCases are the transports every case here goes through: the reactor
// (where there is epoll) and net/http.
var clientCases = func() []clientCase {
	cs := []clientCase{{"net/http", WithTransport(TransportNetHTTP)}}
	if reactorSupported {
		cs = append([]clientCase{{"reactor", WithTransport(TransportReactor)}}, cs...)
	}
	return cs
}()

// ownClients are the purpose-built transport (its own keep-alive pool,
// stale-connection retry, deadlines): clientCases without net/http (none
// where there is no epoll).
var ownClients = clientCases[:len(clientCases)-1]

// rawServer accepts connections and hands each request to handle with the
// connection, so a test can write any bytes (close-delimited bodies, 1xx,
// malformed heads). handle returns false to close the connection.
func rawServer(t *testing.T, handle func(c net.Conn, req *http.Request) bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					_, _ = io.Copy(io.Discard, req.Body)
					if !handle(c, req) {
						return
					}
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

const sseTwoTokens = "data: {\"choices\":[{\"text\":\"a\"}]}\n\n" +
	"data: {\"choices\":[{\"text\":\"b\",\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":2}}\n\n" +
	"data: [DONE]\n\n"

// TestClientFraming sends each body framing and head shape through both
// clients and checks they measure the same thing.
func TestClientFraming(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 10*headReadBuf) // one SSE line far longer than the read buffer
	sseLong := "data: {\"choices\":[{\"text\":\"" + long + "\"}]}\n\n" + sseTwoTokens
	cases := []struct {
		name     string
		raw      string // whole response written by a raw server, which then closes
		handler  http.HandlerFunc
		stream   bool
		state    State
		events   int
		status   int
		errMatch string
	}{
		{name: "chunked SSE with a line 10× the read buffer", stream: true, state: StateOK, events: 3, status: 200,
			handler: func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, sseLong[:100])
				w.(http.Flusher).Flush()
				_, _ = io.WriteString(w, sseLong[100:])
			}},
		{name: "SSE with Content-Length", stream: true, state: StateOK, events: 2, status: 200,
			handler: func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.Header().Set("Content-Length", fmt.Sprint(len(sseTwoTokens)))
				_, _ = io.WriteString(w, sseTwoTokens)
			}},
		{name: "close-delimited SSE", stream: true, state: StateOK, events: 2, status: 200,
			raw: "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + sseTwoTokens},
		{name: "HTTP/1.0 close-delimited SSE", stream: true, state: StateOK, events: 2, status: 200,
			raw: "HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + sseTwoTokens},
		{name: "interim 100 Continue then SSE", stream: true, state: StateOK, events: 2, status: 200,
			raw: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n" + sseTwoTokens},
		{name: "long header line", stream: true, state: StateOK, events: 2, status: 200,
			raw: "HTTP/1.1 200 OK\r\nX-Long: " + long + "\r\nContent-Type: text/event-stream\r\n\r\n" + sseTwoTokens},
		{name: "Content-Length body cut short", stream: true, state: StateStreamError, events: 1, status: 200, errMatch: "unexpected EOF",
			raw: "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 500\r\n\r\n" + sseTwoTokens[:40]},
		{name: "chunked body cut inside a chunk", stream: true, state: StateStreamError, events: 1, status: 200, errMatch: "unexpected EOF",
			raw: "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n200\r\n" + sseTwoTokens[:40]},
		{name: "non-streaming JSON with Content-Length", state: StateOK, events: 1, status: 200,
			handler: func(w http.ResponseWriter, _ *http.Request) {
				b := `{"choices":[{"text":"ab","finish_reason":"length"}],"usage":{"prompt_tokens":4,"completion_tokens":2}}`
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Content-Length", fmt.Sprint(len(b)))
				_, _ = io.WriteString(w, b)
			}},
		{name: "HTTP 503 with a JSON body", stream: true, state: StateHTTPError, status: 503, errMatch: "overloaded",
			handler: func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = io.WriteString(w, `{"error":{"message":"overloaded"}}`)
			}},
		{name: "malformed status line", stream: true, state: StateHTTPError, errMatch: "malformed",
			raw: "HTTX/1.1 200 OK\r\n\r\n"},
	}
	for _, tc := range cases {
		for _, cl := range clientCases {
			t.Run(tc.name+"/"+cl.name, func(t *testing.T) {
				t.Parallel()
				url := ""
				if tc.raw != "" {
					url = rawServer(t, func(c net.Conn, _ *http.Request) bool {
						_, _ = io.WriteString(c, tc.raw)
						return false
					})
				} else {
					srv := httptest.NewServer(tc.handler)
					t.Cleanup(srv.Close)
					url = srv.URL
				}
				rec, _ := replayOne(t, url, 2, cl.opt, WithStream(tc.stream), WithTimeout(10*time.Second))
				if rec.State != tc.state || len(rec.Events) != tc.events || rec.HTTPStatus != tc.status {
					t.Errorf("state %s (%q), %d events, HTTP %d; want %s, %d events, HTTP %d", rec.State, rec.Error, len(rec.Events), rec.HTTPStatus, tc.state, tc.events, tc.status)
				}
				if tc.errMatch != "" && !strings.Contains(rec.Error, tc.errMatch) {
					t.Errorf("error %q does not contain %q", rec.Error, tc.errMatch)
				}
				if tc.state == StateOK && rec.OutputTokens != 2 && tc.events == 2 {
					t.Errorf("output tokens %d, want 2", rec.OutputTokens)
				}
			})
		}
	}
}

// TestClientKeepAlive checks that sequential requests share one connection and
// that a connection the server closed while idle is replaced, the request
// sent once.
func TestClientKeepAlive(t *testing.T) {
	t.Parallel()
	for _, cl := range ownClients {
		t.Run(cl.name, func(t *testing.T) {
			t.Parallel()
			testKeepAlive(t, cl.opt)
		})
	}
}

func testKeepAlive(t *testing.T, client Option) {
	t.Run("reuse", func(t *testing.T) {
		t.Parallel()
		var conns atomic.Int64
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, sseTwoTokens)
		}))
		srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		}
		srv.Start()
		t.Cleanup(srv.Close)
		var sink SliceSink
		sum, err := Replay(context.Background(), urlServer{srv.URL}, schedule(20, 0, 4, 2), nil, &sink, client, WithClosedLoop(1))
		if err != nil || sum.States[StateOK] != 20 {
			t.Fatalf("err %v, states %v", err, sum.States)
		}
		if n := conns.Load(); n != 1 {
			t.Errorf("20 sequential requests opened %d connections, want 1", n)
		}
	})
	// Back to back (gap 0) the next request usually meets the connection
	// before its close is seen (the retry path); 5 ms apart the close is
	// usually seen first (the reactor drops the idle connection).
	for _, gap := range []time.Duration{0, 5 * time.Millisecond} {
		t.Run(fmt.Sprintf("stale idle connection, gap %v", gap), func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			ids := map[string]int{}
			// One response per connection, then close without "Connection: close".
			url := rawServer(t, func(c net.Conn, req *http.Request) bool {
				mu.Lock()
				ids[req.Header.Get(RequestIDHeader)]++
				mu.Unlock()
				_, _ = fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n%s", len(sseTwoTokens), sseTwoTokens)
				return false
			})
			var sink SliceSink
			sum, err := Replay(context.Background(), urlServer{url}, schedule(10, gap, 4, 2), nil, &sink, client, WithClosedLoop(1))
			if err != nil || sum.States[StateOK] != 10 {
				t.Fatalf("err %v, states %v, first record %+v", err, sum.States, sink.Records[0])
			}
			mu.Lock()
			defer mu.Unlock()
			for id, n := range ids {
				if n != 1 {
					t.Errorf("request %s arrived %d times", id, n)
				}
			}
			if len(ids) != 10 {
				t.Errorf("%d distinct requests arrived, want 10", len(ids))
			}
		})
	}
}

// TestClientStrayBytes: a server that sends bytes after a complete response
// must not have them read as the next response on that connection.
func TestClientStrayBytes(t *testing.T) {
	t.Parallel()
	for _, cl := range ownClients {
		t.Run(cl.name, func(t *testing.T) {
			t.Parallel()
			url := rawServer(t, func(c net.Conn, _ *http.Request) bool {
				_, _ = fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n%sJUNK\r\n", len(sseTwoTokens), sseTwoTokens)
				return true
			})
			var sink SliceSink
			sum, err := Replay(context.Background(), urlServer{url}, schedule(3, 0, 4, 2), nil, &sink, cl.opt, WithClosedLoop(1))
			if err != nil || sum.States[StateOK] != 3 {
				t.Fatalf("err %v, states %v, records %+v", err, sum.States, sink.Records)
			}
		})
	}
}

// TestClientTimeoutAndCancel: a server that sends the head and one token and
// then hangs; the per-request timeout and the run's cancellation each end the
// request in its state and close the connection (the server sees EOF).
func TestClientTimeoutAndCancel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		cancel  time.Duration
		want    State
	}{
		{"timeout", time.Second, 0, StateTimeout},
		{"cancel", time.Minute, time.Second, StateCancelled},
	} {
		for _, cl := range ownClients {
			t.Run(tc.name+"/"+cl.name, func(t *testing.T) {
				t.Parallel()
				closed := make(chan struct{})
				url := rawServer(t, func(c net.Conn, _ *http.Request) bool {
					_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"+sseTwoTokens[:strings.Index(sseTwoTokens, "\n\n")+2])
					_, _ = c.Read(make([]byte, 1)) // returns when the client closes
					close(closed)
					return false
				})
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if tc.cancel > 0 {
					time.AfterFunc(tc.cancel, cancel)
				}
				var sink SliceSink
				_, _ = Replay(ctx, urlServer{url}, schedule(1, 0, 4, 2), nil, &sink, cl.opt, WithTimeout(tc.timeout))
				if len(sink.Records) != 1 {
					t.Fatalf("%d records", len(sink.Records))
				}
				rec := sink.Records[0]
				if rec.State != tc.want || len(rec.Events) != 1 {
					t.Errorf("state %s (%s), %d events; want %s, 1 event", rec.State, rec.Error, len(rec.Events), tc.want)
				}
				select {
				case <-closed:
				case <-time.After(30 * time.Second): // generous: only "closed at all" is checked
					t.Errorf("the server never saw the connection close")
				}
			})
		}
	}
}

// heldStacks holds n streams open after their first event, through the
// transport opt, and returns every goroutine's stack taken while they are
// held, then the run's summary once they were released.
func heldStacks(t *testing.T, n int, opt Option) ([]string, Summary) {
	t.Helper()
	hold := make(chan struct{})
	var open sync.WaitGroup
	open.Add(n)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, sseTwoTokens[:strings.Index(sseTwoTokens, "\n\n")+2])
		w.(http.Flusher).Flush()
		open.Done()
		<-hold
		_, _ = io.WriteString(w, sseTwoTokens[strings.Index(sseTwoTokens, "\n\n")+2:])
	}))
	t.Cleanup(srv.Close)
	done := make(chan Summary)
	go func() {
		sum, _ := Replay(context.Background(), urlServer{srv.URL}, schedule(n, 0, 4, 2), nil, &SliceSink{}, opt)
		done <- sum
	}()
	open.Wait()
	time.Sleep(50 * time.Millisecond) // let each reader block on its next event
	buf := make([]byte, 1<<22)
	stacks := strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n")
	close(hold)
	return stacks, <-done
}

func TestEventLogRoundTrip(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	var want []TokenEvent
	var l eventLog
	at := time.Duration(0)
	for i := 0; i < 5000; i++ {
		switch i % 4 {
		case 0:
			at += time.Duration(rng.Int64N(int64(time.Hour)))
		case 1: // several events in one read share a time
		default:
			at += time.Duration(rng.Int64N(int64(20 * time.Millisecond)))
		}
		e := TokenEvent{At: at, Tokens: 1 + rng.IntN(3)*rng.IntN(1000), Reasoning: rng.IntN(2) == 0}
		want = append(want, e)
		l.add(e)
	}
	if got := l.appendTo(nil); !slices.Equal(got, want) {
		t.Fatalf("round trip differs (%d vs %d events)", len(got), len(want))
	}
	// A 128-token stream 10 ms apart, 5 s into the run: 5 B per event (a
	// 4-byte gap varint, 1 byte of tokens), against 24 B per TokenEvent.
	var s eventLog
	for i := 0; i < 128; i++ {
		s.add(TokenEvent{At: 5*time.Second + time.Duration(i)*10*time.Millisecond, Tokens: 1})
	}
	if got, max := len(s.b), 128*5+2; got > max {
		t.Errorf("128 events take %d B, want ≤ %d", got, max)
	}
}

func TestMediaTypeIs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ct   string
		want bool
	}{
		{"text/event-stream", true},
		{"text/event-stream; charset=utf-8", true},
		{"Text/Event-Stream;charset=utf-8", true},
		{" text/event-stream ", true},
		{"application/json", false},
		{"text/event-streams", false},
		{"", false},
		{"text/event-stream garbage", false},
	} {
		if got := mediaTypeIs(tc.ct, "text/event-stream"); got != tc.want {
			t.Errorf("mediaTypeIs(%q) = %t, want %t", tc.ct, got, tc.want)
		}
	}
}

// TestHeadLimits: the purpose-built clients refuse the same oversized heads
// with the same words (net/http's limits differ: 10 MB per head).
func TestHeadLimits(t *testing.T) {
	t.Parallel()
	longLine := "HTTP/1.1 200 OK\r\nX-Long: " + strings.Repeat("x", maxHeadLine+10) + "\r\nContent-Type: text/event-stream\r\n\r\n" + sseTwoTokens
	manyLines := "HTTP/1.1 200 OK\r\n" + strings.Repeat("X-A: b\r\n", maxHeadLines+5) + "Content-Type: text/event-stream\r\n\r\n" + sseTwoTokens
	for _, tc := range []struct{ name, raw, errHas string }{
		{"header line over the limit", longLine, fmt.Sprintf("longer than %d bytes", maxHeadLine)},
		{"too many header lines", manyLines, fmt.Sprintf("more than %d header lines", maxHeadLines)},
	} {
		for _, cl := range ownClients {
			t.Run(tc.name+"/"+cl.name, func(t *testing.T) {
				t.Parallel()
				url := rawServer(t, func(c net.Conn, _ *http.Request) bool {
					_, _ = io.WriteString(c, tc.raw)
					return false
				})
				rec, _ := replayOne(t, url, 2, cl.opt, WithTimeout(10*time.Second))
				if rec.State != StateHTTPError || !strings.Contains(rec.Error, tc.errHas) {
					t.Errorf("state %s (%q), want %s with %q", rec.State, rec.Error, StateHTTPError, tc.errHas)
				}
			})
		}
	}
}

// TestSplitChunkNotLate: complete events followed by the start of a chunk
// whose rest comes 2 s later are stamped when they arrive, not when the
// chunk completes (httputil's chunked reader, which net/http uses, waits:
// the purpose-built clients must not).
func TestSplitChunkNotLate(t *testing.T) {
	t.Parallel()
	const stall = 2 * time.Second
	ev := func(s string) string { return fmt.Sprintf("%x\r\n%s\r\n", len(s), s) }
	e1 := "data: {\"choices\":[{\"text\":\"a\"}]}\n\n"
	e2 := "data: {\"choices\":[{\"text\":\"b\"}]}\n\n"
	e3 := "data: {\"choices\":[{\"text\":\"c\",\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":3}}\n\ndata: [DONE]\n\n"
	third := ev(e3)
	for _, cl := range ownClients {
		t.Run(cl.name, func(t *testing.T) {
			t.Parallel()
			url := rawServer(t, func(c net.Conn, _ *http.Request) bool {
				_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"+ev(e1)+ev(e2)+third[:14])
				time.Sleep(stall)
				_, _ = io.WriteString(c, third[14:]+"0\r\n\r\n")
				return false
			})
			rec, _ := replayOne(t, url, 3, cl.opt, WithTimeout(30*time.Second))
			if rec.State != StateOK || len(rec.Events) != 3 {
				t.Fatalf("state %s (%q), %d events", rec.State, rec.Error, len(rec.Events))
			}
			if ttft, _ := rec.TTFT(); ttft >= stall/2 {
				t.Errorf("TTFT %v: the first events waited for the split chunk (stall %v)", ttft, stall)
			}
			if gap := rec.Events[2].At - rec.Events[1].At; gap < stall/2 {
				t.Errorf("third event %v after the second, want ≈ %v", gap, stall)
			}
		})
	}
}

// TestStrayResponseOnIdleConnection: a server that sends a second,
// unsolicited response on a keep-alive connection after the real one; the
// next request on that connection must not take it as its own.
func TestStrayResponseOnIdleConnection(t *testing.T) {
	t.Parallel()
	const strayBody = "data: {\"choices\":[{\"text\":\"z\",\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"
	stray := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n%s", len(strayBody), strayBody)
	for _, cl := range ownClients {
		t.Run(cl.name, func(t *testing.T) {
			t.Parallel()
			url := rawServer(t, func(c net.Conn, _ *http.Request) bool {
				_, _ = fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n%s", len(sseTwoTokens), sseTwoTokens)
				time.Sleep(50 * time.Millisecond)
				_, _ = io.WriteString(c, stray)
				return true
			})
			var sink SliceSink
			sum, err := Replay(context.Background(), urlServer{url}, schedule(4, 250*time.Millisecond, 4, 2), nil, &sink, cl.opt)
			if err != nil || sum.States[StateOK] != 4 {
				t.Fatalf("err %v, states %v", err, sum.States)
			}
			for _, r := range sink.Records {
				if r.OutputTokens != 2 || r.FinishReason != "length" {
					t.Errorf("request %d: %d tokens, finish %q: took the stray response", r.RequestID, r.OutputTokens, r.FinishReason)
				}
			}
		})
	}
}
