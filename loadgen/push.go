package loadgen

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"
)

// maxPushHead bounds a response head as the push parser accumulates it
// (bytes): a head within head.go's limits (maxHeadLines lines of at most
// maxHeadLine bytes) always fits, so the limits are readHead's, with its
// messages.
const maxPushHead = (maxHeadLines + 2) * (maxHeadLine + 2)

// errPushTimeout is how the reactor ends a request whose deadline passed or
// whose run was cancelled (reqState.fail tells the two apart); it wraps
// os.ErrDeadlineExceeded like a net.Conn's deadline error.
var errPushTimeout = fmt.Errorf("read: %w", os.ErrDeadlineExceeded)

// The phases of a pushResponse.
const (
	phaseHead  = iota // accumulating the status line and headers
	phaseBody         // the body is being consumed into the record
	phaseDrain        // the record is complete; the body is read on to its end so the connection can be reused
	phaseDone         // the body ended (or the exchange failed)
)

// The consumers of a 200's or an error's body.
const (
	bodyError  = iota // non-200: keep up to maxErrorBody bytes for the message
	bodyNotSSE        // 200 to a streaming request, not text/event-stream
	bodySSE           // the event stream
	bodyWhole         // non-streaming: the whole JSON body, up to maxBody
)

// pushResponse parses one HTTP/1.1 response as its bytes arrive, for a
// client that is handed bytes instead of reading them (the reactor): the
// head (head.go's readHead), the body framing (RFC 9112 §6.3: chunked,
// Content-Length, or until close) and the record (client.read: the same
// streamRead steps, httpError and notEventStream), so the reactor and
// net/http measure alike. Drive it with feed for every read, then eof when the
// server closes or fail for an error; done says when the record is
// complete, reusable whether the connection may carry another request.
type pushResponse struct {
	c   *client
	rs  *reqState
	rec *Record

	phase uint8
	kind  uint8
	// got counts response bytes fed (0: nothing arrived, which makes a
	// failure of a reused connection stale).
	got  int
	head []byte // the head's bytes while incomplete
	scan int    // head[:scan] holds no end of head
	h    respHead

	chunked  bool
	chunk    chunkedBody
	left     int64 // Content-Length bytes still due; −1 until close
	extra    bool  // bytes arrived after the body's end
	drained  int   // body bytes read after the record was complete
	body     []byte
	st       *streamRead
	recorded bool // the record is complete
	clean    bool // the body ended on its own framing
}

// init prepares r for one exchange.
func (r *pushResponse) init(c *client, rs *reqState, rec *Record) {
	*r = pushResponse{c: c, rs: rs, rec: rec, left: -1}
}

// ended reports whether the exchange is over for the connection.
func (r *pushResponse) ended() bool { return r.phase == phaseDone }

// reusable reports whether the connection may carry another request: the
// body ended cleanly on its own framing and the server keeps the
// connection alive.
func (r *pushResponse) reusable() bool {
	return r.clean && !r.extra && r.h.keepAlive && (r.chunked || r.left == 0) // clean: recorded too
}

// stale reports whether a failure now is that of a reused connection the
// server closed while it was idle (no byte of a response arrived).
func (r *pushResponse) stale() bool { return r.got == 0 && r.phase == phaseHead }

// feed consumes p, which a read returned at at (offset from the run start).
func (r *pushResponse) feed(p []byte, at time.Duration) {
	r.got += len(p)
	for len(p) > 0 {
		switch r.phase {
		case phaseHead:
			p = r.feedHead(p, at)
		case phaseBody, phaseDrain:
			p = r.feedBody(p, at)
		default:
			r.extra = true
			return
		}
	}
}

// feedHead accumulates head bytes; once the head is complete it is parsed
// and the rest of p returned for the body. A head that arrives whole in p
// (the usual case) is parsed in place: only an incomplete head is copied.
func (r *pushResponse) feedHead(p []byte, at time.Duration) []byte {
	buf := p
	if len(r.head) > 0 {
		r.head = append(r.head, p...)
		buf = r.head
	}
	for {
		end := headEnd(buf, r.scan)
		if end < 0 {
			if len(r.head) == 0 {
				r.head = append(r.head, buf...)
			}
			if len(r.head) > maxPushHead {
				// Too long to be within the limits: readHead names the one broken.
				if _, err := parseHead(&r.c.heads, r.head); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
					r.failHead(err)
				} else {
					r.failHead(fmt.Errorf("response head longer than %d bytes", maxPushHead))
				}
				return nil
			}
			r.scan = max(0, len(r.head)-3)
			return nil
		}
		if interim(buf[:end]) {
			buf = buf[end:]
			r.head, r.scan = nil, 0
			continue
		}
		h, err := parseHead(&r.c.heads, buf[:end])
		if err != nil {
			r.failHead(err)
			return nil
		}
		r.h = h
		r.head, r.scan = nil, 0
		r.startBody(at)
		return buf[end:]
	}
}

// parseHead parses a complete head with head.go's readHead through a
// reader of headReadBuf bytes; pool holds the readers (one per response
// otherwise: 512 B).
func parseHead(pool *sync.Pool, head []byte) (respHead, error) {
	hr, _ := pool.Get().(*headReader)
	if hr == nil {
		hr = &headReader{}
		hr.br = bufio.NewReaderSize(&hr.src, headReadBuf)
	}
	hr.src.Reset(head)
	hr.br.Reset(&hr.src)
	lc := headParser{br: hr.br}
	h, err := lc.readHead()
	hr.src.Reset(nil)
	pool.Put(hr)
	return h, err
}

// headReader is a pooled reader for parseHead.
type headReader struct {
	src bytes.Reader
	br  *bufio.Reader
}

// headEnd returns the index just past the blank line that ends a head in
// b (searching from from), or −1.
func headEnd(b []byte, from int) int {
	for i := from; i < len(b); i++ {
		if b[i] != '\n' {
			continue
		}
		if i+1 < len(b) && b[i+1] == '\n' {
			return i + 2
		}
		if i+2 < len(b) && b[i+1] == '\r' && b[i+2] == '\n' {
			return i + 3
		}
	}
	return -1
}

// interim reports whether head is a well-formed 1xx response other than
// 101 (RFC 9110 §15.2: a final response follows it).
func interim(head []byte) bool {
	if len(head) < 13 || !bytes.HasPrefix(head, []byte("HTTP/1.")) || head[8] != ' ' || head[9] != '1' {
		return false
	}
	code, ok := atoiDigits(head[9:12])
	return ok && code != 101 && (head[12] == ' ' || head[12] == '\r' || head[12] == '\n')
}

// startBody sets the framing and the consumer from the head.
func (r *pushResponse) startBody(at time.Duration) {
	h := &r.h
	r.rec.HTTPStatus = h.status
	r.phase = phaseBody
	switch {
	case r.h.status != http.StatusOK:
		r.kind = bodyError
	case !r.c.cfg.stream:
		r.kind = bodyWhole
	case !mediaTypeIs(h.contentType, "text/event-stream"):
		r.kind = bodyNotSSE
	default:
		r.kind = bodySSE
	}
	if h.status == http.StatusOK {
		r.c.cfg.observeHead(r.rec)
		r.st = &streamRead{c: r.c, rs: r.rs, rec: r.rec}
		r.st.sse.since, r.st.sse.buf = r.c.since, r.st.buf[:]
	}
	switch {
	case h.status == 204 || h.status == 304:
		r.left = 0 // no body (RFC 9112 §6.3 rule 1)
		r.bodyEnd(at)
	case h.chunked:
		r.chunked = true
	case h.length >= 0:
		r.left = h.length
		if r.left == 0 {
			r.bodyEnd(at)
		}
	}
}

// feedBody takes the body's bytes out of p by its framing and returns what
// follows the body.
func (r *pushResponse) feedBody(p []byte, at time.Duration) []byte {
	for len(p) > 0 && r.phase != phaseDone {
		var data []byte
		switch {
		case r.chunked:
			var err error
			data, p, err = r.chunk.next(p)
			if err != nil {
				r.fail(err, at)
				return nil
			}
		case r.left >= 0:
			k := min(int64(len(p)), r.left)
			data, p = p[:k], p[k:]
			r.left -= k
		default:
			data, p = p, nil
		}
		r.consume(data, at)
		if r.phase != phaseDone && (r.chunked && r.chunk.done() || !r.chunked && r.left == 0) {
			r.bodyEnd(at)
		}
	}
	return p
}

// consume hands body bytes to the record's consumer.
func (r *pushResponse) consume(data []byte, at time.Duration) {
	if len(data) == 0 {
		return
	}
	if r.phase == phaseDrain {
		r.drained += len(data)
		if r.drained > maxDrain {
			r.phase = phaseDone // not reusable: the body did not end
		}
		return
	}
	switch r.kind {
	case bodyError, bodyNotSSE, bodyWhole:
		limit := maxErrorBody
		if r.kind == bodyWhole {
			limit = maxBody
		}
		k := min(len(data), limit-len(r.body))
		r.body = append(r.body, data[:k]...)
		if len(r.body) == limit { // the pull client reads this much and stops
			r.complete(at, nil)
			r.phase = phaseDone
		}
	case bodySSE:
		st := r.st
		if err := st.sse.feed(data, at); err != nil {
			st.failRead(err)
			r.record()
			r.phase = phaseDone
			return
		}
		for {
			ev, ok := st.sse.parse()
			if !ok {
				return
			}
			if st.event(ev) {
				r.record()
				if r.rec.State == StateOK { // [DONE]: read on to the body's end
					r.phase = phaseDrain
				} else {
					r.phase = phaseDone
				}
				return
			}
		}
	}
}

// bodyEnd completes the record at the body's clean end.
func (r *pushResponse) bodyEnd(at time.Duration) {
	if !r.recorded {
		r.complete(at, io.EOF)
	}
	r.clean = true
	r.phase = phaseDone
}

// eof is the server closing the connection (read returned 0).
func (r *pushResponse) eof(at time.Duration) {
	switch {
	case r.phase == phaseDone:
	case r.phase == phaseHead && r.got > 0:
		r.failHead(fmt.Errorf("response head cut after %d bytes: %w", r.got, io.ErrUnexpectedEOF))
	case r.phase == phaseHead:
		r.failHead(io.EOF)
	case r.chunked:
		r.fail(io.ErrUnexpectedEOF, at)
	case r.left > 0:
		r.fail(fmt.Errorf("body cut %d bytes before its Content-Length: %w", r.left, io.ErrUnexpectedEOF), at)
	default: // close-delimited: the end of the body
		r.bodyEnd(at)
	}
}

// fail ends the exchange on err (a read error, a framing error, the
// deadline): the record keeps what was measured before it.
func (r *pushResponse) fail(err error, at time.Duration) {
	switch {
	case r.phase == phaseDone:
		return
	case r.phase == phaseHead:
		r.failHead(err)
		return
	case !r.recorded:
		r.complete(at, err)
	}
	r.phase = phaseDone
}

// failHead ends an exchange that failed before its head was complete.
func (r *pushResponse) failHead(err error) {
	r.rec.State = r.rs.fail(err, StateHTTPError)
	r.rec.Error = fmt.Sprintf("POST %s: %v", r.c.url, err)
	r.recorded = true
	r.phase = phaseDone
}

// complete writes the record once the body ended (end: io.EOF when clean,
// else the error that ended it), the way client.read does from a reader.
func (r *pushResponse) complete(at time.Duration, end error) {
	switch r.kind {
	case bodyError:
		httpError(r.h.status, r.body, r.rec) // a cut error body still tells its message
	case bodyNotSSE:
		notEventStream(r.h.contentType, r.body, r.rec)
	case bodyWhole:
		if end == io.EOF {
			end = nil
		}
		r.st.whole(r.body, at, end)
	case bodySSE:
		r.st.sse.err = end // no more bytes: next parses what is buffered, then ends
		r.st.events()
	}
	r.record()
}

// record marks the record complete and, for a 200, builds its events and
// output-token count.
func (r *pushResponse) record() {
	if r.st != nil {
		r.st.finish()
	}
	r.body = nil
	r.recorded = true
}

// chunkedBody decodes chunked transfer coding (RFC 9112 §7.1) pushed in
// pieces. Size lines may end in LF or CRLF and carry extensions (ignored);
// the CRLF after each chunk's data is required; trailer fields are skipped.
type chunkedBody struct {
	state    uint8
	size     int64 // data bytes left in the current chunk, or the size being parsed
	digits   int
	lineLen  int
	trailers int
}

// The states of chunkedBody.
const (
	chunkSize = iota
	chunkExt
	chunkSizeLF
	chunkData
	chunkDataCR
	chunkDataLF
	chunkTrailerStart
	chunkTrailerLine
	chunkTrailerLF
	chunkDone
)

// maxChunkLine bounds a chunk-size line (bytes).
const maxChunkLine = 4096

var errChunked = errors.New("malformed chunked encoding")

func (d *chunkedBody) done() bool { return d.state == chunkDone }

// next consumes p's leading framing bytes and returns the body data that
// follows them (up to the end of the current chunk) and the rest of p.
func (d *chunkedBody) next(p []byte) (data, rest []byte, err error) {
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch d.state {
		case chunkSize, chunkExt:
			d.lineLen++
			if d.lineLen > maxChunkLine {
				return nil, nil, fmt.Errorf("%w: chunk-size line longer than %d bytes", errChunked, maxChunkLine)
			}
			switch {
			case c == '\n':
				if err := d.sizeLine(); err != nil {
					return nil, nil, err
				}
			case c == '\r':
				d.state = chunkSizeLF
			case d.state == chunkExt:
			case c == ';' || c == ' ' || c == '\t':
				d.state = chunkExt
			default:
				v, ok := unhex(c)
				if !ok || d.digits >= 15 {
					return nil, nil, fmt.Errorf("%w: invalid byte %q in chunk length", errChunked, c)
				}
				d.size = d.size<<4 | int64(v)
				d.digits++
			}
		case chunkSizeLF:
			if c != '\n' {
				return nil, nil, fmt.Errorf("%w: CR without LF in a chunk-size line", errChunked)
			}
			if err := d.sizeLine(); err != nil {
				return nil, nil, err
			}
		case chunkData:
			k := min(int64(len(p)-i), d.size)
			d.size -= k
			if d.size == 0 {
				d.state = chunkDataCR
			}
			return p[i : i+int(k)], p[i+int(k):], nil
		case chunkDataCR, chunkDataLF:
			want := byte('\r')
			if d.state == chunkDataLF {
				want = '\n'
			}
			if c != want {
				return nil, nil, fmt.Errorf("%w: chunk data not followed by CRLF", errChunked)
			}
			d.state++
			if d.state > chunkDataLF {
				*d = chunkedBody{}
			}
		case chunkTrailerStart:
			switch c {
			case '\n':
				d.state = chunkDone
				return nil, p[i+1:], nil
			case '\r':
				d.state = chunkTrailerLF
			default:
				d.trailers++
				if d.trailers > maxHeadLines {
					return nil, nil, fmt.Errorf("chunked trailer longer than %d lines", maxHeadLines)
				}
				d.state = chunkTrailerLine
			}
		case chunkTrailerLine:
			if c == '\n' {
				d.state = chunkTrailerStart
			}
		case chunkTrailerLF:
			if c != '\n' {
				d.state = chunkTrailerLine // a field line starting with CR: skip it
				continue
			}
			d.state = chunkDone
			return nil, p[i+1:], nil
		case chunkDone:
			return nil, p[i:], nil
		}
	}
	return nil, nil, nil
}

// sizeLine ends a chunk-size line.
func (d *chunkedBody) sizeLine() error {
	if d.digits == 0 {
		return fmt.Errorf("%w: empty chunk length", errChunked)
	}
	d.lineLen, d.digits = 0, 0
	if d.size == 0 {
		d.state = chunkTrailerStart
		return nil
	}
	d.state = chunkData
	return nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
