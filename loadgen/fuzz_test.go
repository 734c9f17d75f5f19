package loadgen

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httputil"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/transferlab/transferlab/internal/fuzzing"
)

// The fuzz targets of the response path: the SSE reader, the chunked
// decoder, the HTTP/1.1 head parser and the records reader. Each checks a
// property against an independent oracle (a line-by-line reading of the SSE
// spec, net/http's decoders, a write/read round trip), not only the absence
// of panics. Inputs are split at points the fuzzer chooses, as network reads
// would split them. They stay small (the targets bound their inputs), so a
// failure minimises in seconds and a 60 s run covers many inputs.

// maxFuzzInput bounds the inputs the targets look at (bytes), and seeds are
// cut to it: the fuzzer minimises every input that finds new coverage, and
// on a loaded 2-core machine minimising inputs of several KB took most of a
// 60 s run.
const maxFuzzInput = 1 << 10

// pieces splits b at the points that cut's bytes give (each a piece length
// of 1 to 16 bytes, cycling; no cut: one piece).
func pieces(b, cut []byte) [][]byte {
	if len(cut) == 0 {
		return [][]byte{b}
	}
	var out [][]byte
	for i := 0; len(b) > 0; i++ {
		n := min(len(b), int(cut[i%len(cut)]%16)+1)
		out = append(out, b[:n])
		b = b[n:]
	}
	return out
}

// sseRef reads an SSE stream as the WHATWG spec's "Interpreting an event
// stream" says, one line at a time, plus the reader's two documented
// deviations: a last event whose blank line never came is dispatched at
// EOF, and an unfinished last line is an error (truncated true).
func sseRef(in []byte) (events []gotEvent, truncated bool) {
	var lines []string
	s := string(in)
	for {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			break
		}
		lines = append(lines, s[:i])
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			i++
		}
		s = s[i+1:]
	}
	var name, data string
	has := false
	for _, l := range lines {
		switch {
		case l == "":
			if has {
				events = append(events, gotEvent{name: name, data: strings.TrimSuffix(data, "\n")})
			}
			name, data, has = "", "", false
		case l[0] == ':':
		default:
			field, value, _ := strings.Cut(l, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "data":
				data += value + "\n"
				has = true
			case "event":
				name = value
			}
		}
	}
	if has {
		events = append(events, gotEvent{name: name, data: strings.TrimSuffix(data, "\n")})
	}
	return events, s != ""
}

// sseEvents drains s (whose reading has ended) into events; truncated when
// it ended on errSSETruncated, any other error fails t.
func sseEvents(t *testing.T, s *sseReader, events []gotEvent) ([]gotEvent, bool) {
	for {
		ev, err := s.next()
		switch {
		case err == nil:
			checkStreamed(t, &ev)
			events = append(events, gotEvent{name: string(ev.Name), data: string(ev.payload())})
			continue
		case errors.Is(err, io.EOF):
			return events, false
		case errors.Is(err, errSSETruncated):
			return events, true
		}
		t.Fatalf("unexpected error %v", err)
	}
}

// checkStreamed checks an event whose data line was decoded as it arrived
// (sseEvent.long) against the fast scanner over the whole payload: the
// same verdict and, when it decodes, the same chunk.
func checkStreamed(t *testing.T, ev *sseEvent) {
	t.Helper()
	if ev.long == nil {
		return
	}
	data := ev.payload()
	var whole chunk
	s := scanner{b: data}
	werr := s.chunk(&whole)
	got, err := ev.long.result()
	if (err == nil) != (werr == nil) || err == nil && (!sameChunk(got, &whole) || !bytes.Equal(got.Error, whole.Error) || !bytes.Equal(got.Message, whole.Message)) {
		t.Fatalf("payload %q decoded as it arrived: %+v, %v; whole: %+v, %v", data, *got, err, whole, werr)
	}
}

// FuzzSSEReader reads every input through the pull and the push reader,
// split at the fuzzer's points, with data lines of 6 bytes or more decoded
// as they arrive in pieces of 1 to 8 bytes (in a run, from 16 KiB in
// 64 KiB pieces), so the pieces' seams fall everywhere.
func FuzzSSEReader(f *testing.F) {
	fuzzing.Budget(f)
	files, _ := filepath.Glob(filepath.Join("testdata", "sse", "*.txt"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[:min(len(b), maxFuzzInput)], []byte{3, 200, 17})
	}
	f.Add([]byte("data: a\r\rdata:b\r\n\r\nevent: e\n: c\ndata\n\nid: 1\nretry: 2\n\n"), []byte{0})
	f.Add([]byte("data: x\ndata: y"), []byte(nil))
	f.Fuzz(func(t *testing.T, in, cut []byte) {
		if len(in) > maxFuzzInput {
			return
		}
		want, wantTrunc := sseRef(in)
		parts := pieces(in, cut)

		// Pull: next over a reader that returns one piece per Read.
		chunks := make([]string, len(parts))
		for i, p := range parts {
			chunks[i] = string(p)
		}
		cr := &chunkReader{chunks: chunks}
		pull := newSSEReader(cr, func() time.Duration { return cr.now }, make([]byte, 16))
		piece := 1
		if len(cut) > 0 {
			piece += int(cut[0] % 8)
		}
		pull.longMin, pull.longPiece = 6, piece
		defer pull.release()
		got, trunc := sseEvents(t, pull, nil)
		if !reflect.DeepEqual(got, want) && (len(got) > 0 || len(want) > 0) || trunc != wantTrunc {
			t.Fatalf("pull reader: events %+v truncated %t; the spec gives %+v truncated %t", got, trunc, want, wantTrunc)
		}

		// Push: feed and parse, as the reactor does, then the end of stream.
		push := newSSEReader(nil, nil, make([]byte, 16))
		push.longMin, push.longPiece = 6, piece
		defer push.release()
		got = got[:0]
		for i, p := range parts {
			if err := push.feed(p, time.Duration(i)); err != nil {
				t.Fatal(err)
			}
			for {
				ev, ok := push.parse()
				if !ok {
					break
				}
				checkStreamed(t, &ev)
				got = append(got, gotEvent{name: string(ev.Name), data: string(ev.payload())})
			}
		}
		push.err = io.EOF
		got, trunc = sseEvents(t, push, got)
		if !reflect.DeepEqual(got, want) && (len(got) > 0 || len(want) > 0) || trunc != wantTrunc {
			t.Fatalf("push reader: events %+v truncated %t; the spec gives %+v truncated %t", got, trunc, want, wantTrunc)
		}
	})
}

// chunkedResult is what chunkedBody made of an input.
type chunkedResult struct {
	data []byte
	rest []byte // bytes after the final CRLF, when done
	done bool
	err  bool
}

// decodeChunked pushes parts through a chunkedBody as the reactor does.
func decodeChunked(parts [][]byte) chunkedResult {
	var d chunkedBody
	var r chunkedResult
	for _, p := range parts {
		for len(p) > 0 {
			data, rest, err := d.next(p)
			if err != nil {
				r.err = true
				return r
			}
			r.data = append(r.data, data...)
			if d.done() {
				r.done = true
				r.rest = append(r.rest, rest...)
				break
			}
			p = rest
		}
	}
	return r
}

func FuzzChunkedBody(f *testing.F) {
	fuzzing.Budget(f)
	f.Add([]byte("5\r\nhello\r\n0\r\n\r\n"), []byte{1})
	f.Add([]byte("3;ext=1\r\nabc\r\nA\nxxxxxxxxxx\r\n0\r\nTrailer: x\r\n\r\nnext"), []byte{2, 7})
	f.Add([]byte("1\r\nX\r\n0\n\n"), []byte(nil))
	f.Add([]byte("fffffffffffffff\r\n"), []byte{0})
	f.Add([]byte("2\r\nab\n\r\n"), []byte{4})
	f.Fuzz(func(t *testing.T, in, cut []byte) {
		if len(in) > maxFuzzInput {
			return
		}
		whole := decodeChunked([][]byte{in})
		split := decodeChunked(pieces(in, cut))
		if !reflect.DeepEqual(whole, split) {
			t.Fatalf("%q: whole %+v, split %+v", in, whole, split)
		}
		if !whole.done || whole.err {
			return
		}
		// Where both decoders read the body to its end, they agree on its data.
		ref, err := io.ReadAll(httputil.NewChunkedReader(bytes.NewReader(in)))
		if err == nil && !bytes.Equal(ref, whole.data) {
			t.Fatalf("%q: data %q, net/http's chunked reader %q", in, whole.data, ref)
		}
	})
}

func FuzzParseHead(f *testing.F) {
	fuzzing.Budget(f)
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 503 Busy\nContent-Length: 12\nConnection: keep-alive\n\n"))
	f.Add([]byte("HTTP/1.1 404\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"))
	var pool sync.Pool
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > maxFuzzInput {
			return
		}
		end := headEnd(in, 0)
		if end < 0 {
			return
		}
		h, err := parseHead(&pool, in[:end])
		if err != nil {
			return
		}
		if h.status < 100 || h.status > 999 || h.bytes > end {
			t.Fatalf("%q: status %d, %d head bytes of %d", in[:end], h.status, h.bytes, end)
		}
		// net/http, given the same head, reads the same status and framing
		// where it accepts it (it returns an interim 1xx as the response:
		// such heads are not compared).
		final := in[:end]
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(final)), nil)
		if err != nil {
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode < 200 {
			return
		}
		if resp.StatusCode != h.status {
			t.Fatalf("%q: status %d, net/http %d", final, h.status, resp.StatusCode)
		}
		chunked := len(resp.TransferEncoding) > 0 && resp.TransferEncoding[0] == "chunked"
		if chunked != h.chunked {
			t.Fatalf("%q: chunked %t, net/http %t", final, h.chunked, chunked)
		}
		if !h.chunked && h.length >= 0 && resp.ContentLength != h.length {
			t.Fatalf("%q: Content-Length %d, net/http %d", final, h.length, resp.ContentLength)
		}
	})
}

func FuzzReadRecords(f *testing.F) {
	fuzzing.Budget(f)
	f.Add([]byte(`{"request_id":1,"arm":"a","state":"ok","events":[{"at_ns":5,"tokens":2,"reasoning":true}],"output_tokens":2,"prompt_text":true}` + "\n\n" +
		`{"request_id":2,"state":"timeout","error":"x\u00e9"}`))
	f.Add([]byte(`{"state":"nope"}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > maxFuzzInput {
			return
		}
		recs, err := ReadRecords(bytes.NewReader(in))
		if err != nil {
			return
		}
		// What was read is written and read back unchanged.
		var b bytes.Buffer
		sink := NewJSONLSink(&b)
		for i := range recs {
			if err := sink.Add(&recs[i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := sink.Close(); err != nil {
			t.Fatal(err)
		}
		again, err := ReadRecords(&b)
		if err != nil {
			t.Fatalf("reading back %q: %v", b.Bytes(), err)
		}
		if len(recs) != len(again) || len(recs) > 0 && !reflect.DeepEqual(recs, again) {
			t.Fatalf("round trip changed the records:\n%+v\n%+v", recs, again)
		}
	})
}
