package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// The lean client's sizes and limits.
const (
	// leanReadBuf is a connection's read buffer (bytes): the response head
	// and chunk-size lines pass through it; reads at least as large as it
	// (the SSE reader's) bypass it, and an SSE line longer than it is
	// assembled by the SSE reader, not here.
	leanReadBuf = 512
	// leanMaxIdle caps the idle keep-alive connections one client keeps;
	// a connection freed while the pool is full is closed.
	leanMaxIdle = 4096
	// leanDialTimeout bounds one TCP connect (the request's own timeout
	// bounds it too, whichever ends first).
	leanDialTimeout = 10 * time.Second
	// maxHeadLine bounds one status or header line of a response (bytes).
	maxHeadLine = 64 << 10
	// maxHeadLines bounds the number of header lines of a response.
	maxHeadLines = 256
)

// aLongTimeAgo is a deadline in the past: setting it makes a blocked read or
// write return at once (os.ErrDeadlineExceeded).
var aLongTimeAgo = time.Unix(1, 0)

// leanTransport is a purpose-built HTTP/1.1 client for one plain http://
// URL, the instrument's hot path: the request is written with one Write from
// a pooled buffer, the response head is parsed by hand through a small
// per-connection bufio.Reader, chunked bodies go through
// httputil.NewChunkedReader, and the body is read on the caller's goroutine
// (no reader or writer goroutine per connection, unlike net/http's
// persistConn). Idle connections are kept, up to leanMaxIdle, for reuse.
// Per-request timeouts are connection deadlines (the runtime's netpoller
// timer, no goroutine); run cancellation moves the deadline into the past
// from a context.AfterFunc callback.
type leanTransport struct {
	addr string // host:port dialled
	host string // Host header
	path string // request target (path and query)
	// extra holds the caller's headers (WithHeaders), rendered once as
	// "Name: value\r\n" lines.
	extra []byte

	mu   sync.Mutex
	idle []*leanConn

	wire sync.Pool // *leanWire
}

// leanConn is one connection and its read buffer.
type leanConn struct {
	nc     net.Conn
	br     *bufio.Reader
	reused bool // taken from the idle pool (it may have been closed by the server meanwhile)
}

// leanWire is a pooled pair of buffers for building one request.
type leanWire struct {
	body []byte
	wire []byte
}

// newLeanTransport parses rawURL, which must be http://host[:port]/path;
// every request carries the headers h (rendered once, here).
func newLeanTransport(rawURL string, h http.Header) (*leanTransport, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" || u.Host == "" || u.User != nil {
		return nil, fmt.Errorf("lean client: %q is not a plain http://host URL", rawURL)
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	var extra bytes.Buffer
	if err := h.Write(&extra); err != nil {
		return nil, err
	}
	return &leanTransport{addr: addr, host: u.Host, path: u.RequestURI(), extra: extra.Bytes()}, nil
}

func (t *leanTransport) getWire() *leanWire {
	if w, ok := t.wire.Get().(*leanWire); ok {
		return w
	}
	return &leanWire{}
}

// putWire returns w to the pool unless a huge prompt made it large.
func (t *leanTransport) putWire(w *leanWire) {
	if cap(w.wire) <= 64<<10 {
		t.wire.Put(w)
	}
}

// appendHead appends the request line and headers for a body of n bytes.
func (t *leanTransport) appendHead(b []byte, id int, stream bool, n int) []byte {
	b = append(b, "POST "...)
	b = append(b, t.path...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, t.host...)
	b = append(b, "\r\nUser-Agent: transferlab-loadgen\r\nContent-Type: application/json\r\n"...)
	if stream {
		b = append(b, "Accept: text/event-stream\r\n"...)
	}
	b = append(b, t.extra...)
	b = append(b, RequestIDHeader...)
	b = append(b, ": "...)
	b = strconv.AppendInt(b, int64(id), 10)
	b = append(b, "\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, "\r\n\r\n"...)
}

// get returns an idle connection (LIFO) or, when none is idle or fresh is
// set, dials a new one.
func (t *leanTransport) get(ctx context.Context, deadline time.Time, fresh bool) (*leanConn, error) {
	for !fresh {
		t.mu.Lock()
		n := len(t.idle)
		if n == 0 {
			t.mu.Unlock()
			break
		}
		lc := t.idle[n-1]
		t.idle[n-1] = nil
		t.idle = t.idle[:n-1]
		t.mu.Unlock()
		if !idleClean(lc.nc) { // the server closed it, or sent bytes nobody asked for
			_ = lc.nc.Close()
			continue
		}
		lc.reused = true
		return lc, nil
	}
	// Dialing runs ~4 KiB deep; on its own short-lived goroutine it leaves
	// the request's goroutine at the stack size its reads need (a grown stack
	// is shrunk only while less than a quarter of it is in use, which a
	// blocked reader never is).
	done := make(chan dialResult, 1)
	go t.dial(ctx, deadline, done)
	r := <-done
	if r.err != nil {
		return nil, r.err
	}
	return &leanConn{nc: r.nc, br: bufio.NewReaderSize(r.nc, leanReadBuf)}, nil
}

type dialResult struct {
	nc  net.Conn
	err error
}

func (t *leanTransport) dial(ctx context.Context, deadline time.Time, done chan<- dialResult) {
	d := net.Dialer{Timeout: leanDialTimeout, Deadline: deadline, KeepAlive: 30 * time.Second}
	nc, err := d.DialContext(ctx, "tcp", t.addr)
	done <- dialResult{nc, err}
}

// put keeps lc for reuse, or closes it when the pool is full or the server
// sent bytes after the response (they would be read as the next response).
func (t *leanTransport) put(lc *leanConn) {
	if lc.br.Buffered() > 0 {
		_ = lc.nc.Close()
		return
	}
	if err := lc.nc.SetDeadline(time.Time{}); err != nil {
		_ = lc.nc.Close()
		return
	}
	t.mu.Lock()
	if len(t.idle) < leanMaxIdle {
		t.idle = append(t.idle, lc)
		lc = nil
	}
	t.mu.Unlock()
	if lc != nil {
		_ = lc.nc.Close()
	}
}

// closeIdle closes every idle connection.
func (t *leanTransport) closeIdle() {
	t.mu.Lock()
	idle := t.idle
	t.idle = nil
	t.mu.Unlock()
	for _, lc := range idle {
		_ = lc.nc.Close()
	}
}

// errStaleConn marks a reused connection that failed before any byte of a
// response arrived: the server closed it while it was idle, so the request
// is sent again on a new connection.
var errStaleConn = errors.New("reused connection closed by the server before responding")

// roundTrip writes wire on lc and reads the response head. A reused
// connection that fails before any response byte returns errStaleConn.
func (lc *leanConn) roundTrip(wire []byte) (leanHead, error) {
	if _, err := lc.nc.Write(wire); err != nil {
		if lc.reused && isConnGone(err) {
			return leanHead{}, errStaleConn
		}
		return leanHead{}, err
	}
	h, err := lc.readHead()
	if err != nil && lc.reused && h.bytes == 0 && isConnGone(err) {
		return h, errStaleConn
	}
	return h, err
}

// isConnGone reports an error of a connection the peer closed.
func isConnGone(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// leanHead is what the client uses of a response head.
type leanHead struct {
	status      int
	contentType string
	chunked     bool
	length      int64 // Content-Length, −1 when absent
	keepAlive   bool
	bytes       int // head bytes read (0: nothing arrived)
}

// readHead reads a response's status line and headers (RFC 9112 §4, §5),
// skipping interim 1xx responses.
func (lc *leanConn) readHead() (leanHead, error) {
	h := leanHead{length: -1}
	for {
		line, err := lc.line(&h)
		if err != nil {
			return h, err
		}
		if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
			return h, fmt.Errorf("malformed HTTP status line %q", clip(line, 80))
		}
		code, ok := atoiDigits(line[9:12])
		if !ok || (len(line) > 12 && line[12] != ' ') {
			return h, fmt.Errorf("malformed HTTP status code in %q", clip(line, 80))
		}
		h.status = code
		h.keepAlive = line[7] != '0' // HTTP/1.1 keeps alive unless told otherwise; 1.0 closes
		if err := lc.headers(&h); err != nil {
			return h, err
		}
		if code >= 200 || code == 101 {
			return h, nil
		}
		h = leanHead{length: -1, bytes: h.bytes} // interim 1xx: the real head follows
	}
}

// headers reads header lines up to the blank line into h.
func (lc *leanConn) headers(h *leanHead) error {
	for i := 0; ; i++ {
		if i > maxHeadLines {
			return fmt.Errorf("response has more than %d header lines", maxHeadLines)
		}
		line, err := lc.line(h)
		if err != nil {
			return err
		}
		if len(line) == 0 {
			return nil
		}
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return fmt.Errorf("malformed header line %q", clip(line, 80))
		}
		v = bytes.TrimSpace(v)
		switch {
		case bytes.EqualFold(k, []byte("Content-Type")):
			h.contentType = string(v)
		case bytes.EqualFold(k, []byte("Content-Length")):
			n, ok := atoiDigits(v)
			if !ok || (h.length >= 0 && int64(n) != h.length) {
				return fmt.Errorf("bad Content-Length %q", clip(v, 40))
			}
			h.length = int64(n)
		case bytes.EqualFold(k, []byte("Transfer-Encoding")):
			h.chunked = containsTokenFold(v, "chunked")
		case bytes.EqualFold(k, []byte("Connection")):
			if containsTokenFold(v, "close") {
				h.keepAlive = false
			} else if containsTokenFold(v, "keep-alive") {
				h.keepAlive = true
			}
		}
	}
}

// line reads one head line without its line ending. A line longer than the
// read buffer is assembled on the heap (up to maxHeadLine bytes).
func (lc *leanConn) line(h *leanHead) ([]byte, error) {
	b, err := lc.br.ReadSlice('\n')
	h.bytes += len(b)
	if errors.Is(err, bufio.ErrBufferFull) {
		long := append([]byte(nil), b...)
		for errors.Is(err, bufio.ErrBufferFull) && len(long) <= maxHeadLine+2 {
			b, err = lc.br.ReadSlice('\n')
			h.bytes += len(b)
			long = append(long, b...)
		}
		b = long
	}
	if n := len(bytes.TrimRight(b, "\r\n")); n > maxHeadLine {
		return nil, fmt.Errorf("response head line longer than %d bytes", maxHeadLine)
	}
	if err != nil {
		if errors.Is(err, io.EOF) && h.bytes > 0 {
			return nil, fmt.Errorf("response head cut after %d bytes: %w", h.bytes, io.ErrUnexpectedEOF)
		}
		return nil, err
	}
	b = b[:len(b)-1]
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b, nil
}

// atoiDigits parses a non-empty run of ASCII digits (no sign, ≤ 18 digits).
func atoiDigits(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// containsTokenFold reports whether the comma-separated list v holds tok
// (ASCII case-insensitive).
func containsTokenFold(v []byte, tok string) bool {
	for len(v) > 0 {
		var item []byte
		item, v, _ = bytes.Cut(v, []byte(","))
		if bytes.EqualFold(bytes.TrimSpace(item), []byte(tok)) {
			return true
		}
	}
	return false
}

// leanBody reads a response body framed as the head says: chunked,
// Content-Length, or until the server closes (RFC 9112 §6.3). done is set
// when the body ended cleanly, which is when the connection may be reused.
type leanBody struct {
	lc      *leanConn
	r       io.Reader
	limited io.LimitedReader
	chunked bool
	done    bool
}

func (b *leanBody) init(lc *leanConn, h *leanHead) {
	b.lc = lc
	switch {
	case h.status == 204 || h.status == 304:
		b.done = true // no body (RFC 9112 §6.3 rule 1)
	case h.chunked:
		b.chunked = true
		b.r = &chunkedReader{br: lc.br}
	case h.length >= 0:
		b.limited = io.LimitedReader{R: lc.br, N: h.length}
		b.r = &b.limited
		b.done = h.length == 0
	default:
		b.r = lc.br
	}
}

// Read implements io.Reader.
func (b *leanBody) Read(p []byte) (int, error) {
	if b.done {
		return 0, io.EOF
	}
	n, err := b.r.Read(p)
	if !errors.Is(err, io.EOF) {
		return n, err
	}
	if b.r == &b.limited && b.limited.N > 0 {
		return n, fmt.Errorf("body cut %d bytes before its Content-Length: %w", b.limited.N, io.ErrUnexpectedEOF)
	}
	b.done = true
	return n, io.EOF
}

// chunkedReader decodes a chunked body (the reactor's chunkedBody, push.go)
// from a bufio.Reader, returning the data as soon as any has arrived:
// httputil's chunked reader keeps reading to fill its caller's buffer, so
// events already received wait for the rest of a chunk split across
// packets, and are stamped late. It ends with io.EOF after the last chunk
// and its trailer.
type chunkedReader struct {
	br *bufio.Reader
	d  chunkedBody
}

// Read implements io.Reader.
func (c *chunkedReader) Read(p []byte) (int, error) {
	for len(p) > 0 {
		if c.d.done() {
			return 0, io.EOF
		}
		if c.br.Buffered() == 0 {
			if _, err := c.br.Peek(1); err != nil { // one read of the connection
				if errors.Is(err, io.EOF) {
					err = io.ErrUnexpectedEOF
				}
				return 0, err
			}
		}
		raw, _ := c.br.Peek(min(c.br.Buffered(), len(p)))
		data, rest, err := c.d.next(raw)
		if err != nil {
			return 0, err
		}
		n := copy(p, data)
		_, _ = c.br.Discard(len(raw) - len(rest))
		if n > 0 {
			return n, nil
		}
	}
	return 0, nil
}
