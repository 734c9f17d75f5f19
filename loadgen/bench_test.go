package loadgen

import (
	"bytes"
	"context"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/transferlab/transferlab/loadgen/loadgentest"
	"github.com/transferlab/transferlab/traces"
)

// Benchmarks of the instrument's hot path: their cost becomes schedule lag
// and stamping delay. Numbers are never lab results.

// sseBody builds a vLLM-shaped completions stream of n token events.
func sseBody(n int) []byte {
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		b.WriteString(`data: {"id":"cmpl-8c1","object":"text_completion","created":1732800000,"model":"meta-llama/Llama-3.1-8B","choices":[{"index":0,"text":" tok","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null}` + "\n\n")
	}
	b.WriteString(`data: {"choices":[],"usage":{"prompt_tokens":4,"completion_tokens":128,"total_tokens":132}}` + "\n\ndata: [DONE]\n\n")
	return b.Bytes()
}

// BenchmarkSSEParse measures framing plus JSON decoding per event (ns/op is per event).
func BenchmarkSSEParse(b *testing.B) {
	body := sseBody(128)
	b.ReportAllocs()
	b.SetBytes(int64(len(body) / 130))
	rd := bytes.NewReader(body)
	var ch chunk
	buf := make([]byte, 4096)
	since := func() time.Duration { return 0 }
	events := 0
	for events < b.N {
		rd.Reset(body)
		s := newSSEReader(rd, since, buf)
		for {
			ev, err := s.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if string(ev.Data) == "[DONE]" {
				continue
			}
			if err := decodeChunk(ev.Data, &ch); err != nil {
				b.Fatal(err)
			}
			events++
		}
	}
}

// BenchmarkSSEFraming measures the SSE framing alone per event.
func BenchmarkSSEFraming(b *testing.B) {
	body := sseBody(128)
	b.ReportAllocs()
	rd := bytes.NewReader(body)
	buf := make([]byte, 4096)
	since := func() time.Duration { return 0 }
	events := 0
	for events < b.N {
		rd.Reset(body)
		s := newSSEReader(rd, since, buf)
		for {
			if _, err := s.next(); err != nil {
				break
			}
			events++
		}
	}
}

func benchRecord(n int) *Record {
	r := &Record{RequestID: 12345, Arm: "baseline", OfferedLoad: 100, State: StateOK, SentAt: ms(1), EndAt: ms(2000), OutputTokens: n, OutputTokensSource: SourceUsage}
	for i := 0; i < n; i++ {
		r.Events = append(r.Events, TokenEvent{At: ms(10 + float64(i)*15), Tokens: 1})
	}
	return r
}

// BenchmarkSinkAdd measures each sink's Add for a 128-token record.
func BenchmarkSinkAdd(b *testing.B) {
	r := benchRecord(128)
	b.Run("jsonl", func(b *testing.B) {
		s := NewJSONLSink(io.Discard)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			_ = s.Add(r)
		}
	})
	b.Run("histograms", func(b *testing.B) {
		h := NewHistograms()
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			_ = h.Add(r)
		}
	})
	b.Run("summary", func(b *testing.B) {
		z := newSummarizer(time.Millisecond, 0)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			z.add(r)
		}
	})
}

// BenchmarkPacerPace measures one Pace call per pacer.
func BenchmarkPacerPace(b *testing.B) {
	s := schedule(1<<16, time.Millisecond, 1, 1)
	for _, tc := range []struct {
		name string
		p    Pacer
	}{{"trace", NewTracePacer(s)}, {"vegeta constant", vegeta.ConstantPacer{Freq: 1000, Per: time.Second}}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				tc.p.Pace(0, uint64(i&(1<<16-1)))
			}
		})
	}
}

// BenchmarkRequestBody measures building one request body (1,024 token ids).
func BenchmarkRequestBody(b *testing.B) {
	cfg := defaultConfig()
	c := &client{cfg: &cfg}
	q := schedule(1, 0, 1024, 128).Requests[0]
	buf := make([]byte, 0, 8192)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf = c.body(buf[:0], &q)
	}
}

// BenchmarkStreamRequest sends one 32-token streaming request per
// iteration, back to back, through each client against the in-process fast
// server: ns/op, B/op and allocs/op are per request, server included
// (compare the clients, not the absolute figures).
func BenchmarkStreamRequest(b *testing.B) {
	srv, err := loadgentest.Start("127.0.0.1:0", loadgentest.Config{Tokens: 32})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Close(ctx)
	})
	for _, cl := range clientCases {
		b.Run(strings.ReplaceAll(cl.name, "/", "-"), func(b *testing.B) {
			cfg := defaultConfig()
			cl.opt(&cfg)
			start := time.Now()
			c, err := newClient(context.Background(), &cfg, srv.BaseURL(), start)
			if err != nil {
				b.Fatal(err)
			}
			defer c.close()
			req := traces.Request{ID: 1, InputTokens: 16, OutputTokens: 32}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				var rec Record
				req.ID = i
				c.do(ctx, &req, &rec)
				if rec.State != StateOK || len(rec.Events) != 32 {
					b.Fatalf("state %s (%s), %d events", rec.State, rec.Error, len(rec.Events))
				}
			}
		})
	}
}

// longDataResponse is an HTTP response whose SSE body carries a token event,
// one data event of size bytes (a completion chunk whose text fills it, as
// loadgentest's LongLineData sends), a usage chunk and [DONE].
func longDataResponse(size int) []byte {
	const head, tail = `data: {"id":"cmpl-0","object":"text_completion","model":"fast","choices":[{"index":0,"text":"`, `","finish_reason":null}]}` + "\n\n"
	long := head + strings.Repeat("x", size-len(head)-len(tail)) + tail
	body := `data: {"choices":[{"text":"a"}]}` + "\n\n" + long +
		`data: {"choices":[{"text":"b","finish_reason":"length"}],"usage":{"prompt_tokens":4,"completion_tokens":3}}` + "\n\ndata: [DONE]\n\n"
	return []byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
}

// BenchmarkLongDataEvent measures what one response carrying a long data
// event costs the reactor's loop, fed as the loop reads it (64 KiB reads):
// MB/s over the long line, and max-feed-µs, the longest single feed (the
// time every other stream's reads wait behind this one's).
func BenchmarkLongDataEvent(b *testing.B) {
	for _, size := range []int{1 << 20, 5 << 20} {
		b.Run(strconv.Itoa(size>>20)+"MiB", func(b *testing.B) {
			raw := longDataResponse(size)
			cfg := defaultConfig()
			c := &client{cfg: &cfg, url: "http://x/v1/completions", since: func() time.Duration { return 0 }}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			var worst time.Duration
			for i := 0; i < b.N; i++ {
				var rec Record
				rs := reqState{runCtx: context.Background()}
				var r pushResponse
				r.init(c, &rs, &rec)
				for off := 0; off < len(raw); off += 64 << 10 {
					t0 := time.Now()
					r.feed(raw[off:min(len(raw), off+64<<10)], time.Duration(off+1))
					worst = max(worst, time.Since(t0))
				}
				if rec.State != StateOK || rec.OutputTokens != 3 || len(rec.Events) != 3 {
					b.Fatalf("state %s (%q), %d tokens, %d events; want ok, 3, 3", rec.State, rec.Error, rec.OutputTokens, len(rec.Events))
				}
			}
			b.ReportMetric(float64(worst.Microseconds()), "max-feed-µs")
		})
	}
}

// segmentTokens is the length of the benchmark's streams (token events).
const segmentTokens = 128

// The benchmark server's events: serve-sim's bytes for a completions
// stream with usage (sim/openai.go's newSSEEvents), each one chunk.
var (
	segToken = segChunk(`data: {"id":"cmpl-4242","object":"text_completion","created":1764662400,"model":"sim-llama-3-8b","choices":[{"index":0,"text":" tok","logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n")
	segLast  = segChunk(`data: {"id":"cmpl-4242","object":"text_completion","created":1764662400,"model":"sim-llama-3-8b","choices":[{"index":0,"text":" tok","logprobs":null,"finish_reason":"length"}],"usage":null}` + "\n\n")
	segTail  = append(append(segChunk(`data: {"id":"cmpl-4242","object":"text_completion","created":1764662400,"model":"sim-llama-3-8b","choices":[],"usage":{"prompt_tokens":32,"completion_tokens":128,"total_tokens":160}}`+"\n\n"),
		segChunk("data: [DONE]\n\n")...), "0\r\n\r\n"...)
	segHead = []byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
)

func segChunk(p string) []byte {
	return []byte(strconv.FormatInt(int64(len(p)), 16) + "\r\n" + p + "\r\n")
}
