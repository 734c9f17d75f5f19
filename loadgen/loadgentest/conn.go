package loadgentest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"time"
)

// Limits of one request.
const (
	// readBufBytes is a connection's read buffer: a request head line longer
	// than it is assembled on the heap (up to maxHeadBytes).
	readBufBytes = 4 << 10
	// maxHeadBytes bounds a request's head (net/http's DefaultMaxHeaderBytes).
	maxHeadBytes = 1 << 20
	// maxBodyBytes bounds a request's body (a 1M-token prompt is ~8 MB).
	maxBodyBytes = 32 << 20
	// keepBodyBytes: a body buffer larger than this is dropped after its request.
	keepBodyBytes = 1 << 20
	// lingerBytes and lingerTime bound what is read, and how long, after
	// refusing a request that was not read to its end.
	lingerBytes = 256 << 10
	lingerTime  = 500 * time.Millisecond
)

// route is what a request line asks for.
type route uint8

const (
	routeNotFound route = iota
	routeCompletions
	routeChat
	routeHealth
	routeBadMethod // a known path with the wrong method
)

// head is what the server uses of a request head (RFC 9112 §3, §5, §6).
type head struct {
	route         route
	allow         string // "\r\nAllow: …" header line for routeBadMethod
	http10        bool
	contentLength int64 // −1 when absent
	chunked       bool
	expect100     bool
	connClose     bool
	connKeepAlive bool
	requestID     string
}

// keepAlive reports whether the connection may serve another request after
// this one when the response has a length: HTTP/1.1 unless "Connection:
// close"; HTTP/1.0 only with "Connection: keep-alive".
func (h *head) keepAlive() bool {
	if h.http10 {
		return h.connKeepAlive && !h.connClose
	}
	return !h.connClose
}

// httpError is a request the server answers with an error status.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return strconv.Itoa(e.status) + " " + e.msg }

func badRequest(format string, a ...any) *httpError {
	return &httpError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, a...)}
}

// conn is one client connection, served by one goroutine.
type conn struct {
	s    *Server
	nc   net.Conn
	br   *bufio.Reader
	idle bool // under s.mu: waiting for a request

	out     []byte // response being built
	body    []byte // request body being read
	long    []byte // a head line longer than the read buffer
	headLen int    // head bytes read so far
}

func newConn(s *Server, nc net.Conn) *conn {
	return &conn{s: s, nc: nc, br: bufio.NewReaderSize(nc, readBufBytes)}
}

// serve reads and answers requests until the client or the server closes.
func (c *conn) serve() {
	defer c.s.untrack(c)
	defer c.nc.Close()
	for {
		if !c.s.setIdle(c, true) {
			return
		}
		_, err := c.br.Peek(1)
		if !c.s.setIdle(c, false) || err != nil {
			return
		}
		if !c.handle() {
			return
		}
	}
}

// handle reads one request and answers it; false when the connection must close.
func (c *conn) handle() bool {
	_ = c.nc.SetReadDeadline(time.Now().Add(c.s.headTimeout))
	var h head
	if err := c.readHead(&h); err != nil {
		return c.failRead(err)
	}
	if h.route == routeCompletions || h.route == routeChat {
		c.s.Requests.Add(1)
		if h.requestID != "" {
			if _, dup := c.s.seen.LoadOrStore(h.requestID, struct{}{}); dup {
				c.s.Duplicates.Add(1)
			}
		}
	}
	_ = c.nc.SetReadDeadline(time.Now().Add(c.s.headTimeout))
	body, err := c.readBody(&h)
	if err != nil {
		return c.failRead(err)
	}
	_ = c.nc.SetReadDeadline(time.Time{})
	keep := h.keepAlive() && !c.s.isClosing()
	if cap(c.body) > keepBodyBytes {
		defer func() { c.body = nil }()
	}
	switch h.route {
	case routeCompletions, routeChat:
		return c.complete(&h, body, keep)
	case routeHealth:
		return c.write(c.appendHead(c.out[:0], http.StatusOK, "", 0, false, keep, &h, "")) && keep
	case routeBadMethod:
		return c.writeError(http.StatusMethodNotAllowed, "method not allowed", keep, &h, h.allow)
	default:
		return c.writeError(http.StatusNotFound, "no such route", keep, &h, "")
	}
}

// failRead answers a request that could not be read (when the client is
// still there to hear it) and closes the connection.
func (c *conn) failRead(err error) bool {
	var he *httpError
	if errors.As(err, &he) {
		c.writeError(he.status, he.msg, false, &head{}, "")
		c.linger()
	}
	return false
}

// linger half-closes the connection and reads what the client still sends
// (up to lingerBytes, for up to lingerTime) before the caller closes it:
// closing with unread bytes would send a reset that can destroy the error
// response before the client reads it (as net/http's closeWriteAndWait).
func (c *conn) linger() {
	if cw, ok := c.nc.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_ = c.nc.SetReadDeadline(time.Now().Add(lingerTime))
	_, _ = io.CopyN(io.Discard, c.br, lingerBytes)
}

// readHead reads the request line and header lines up to the blank line.
func (c *conn) readHead(h *head) error {
	c.headLen = 0
	h.contentLength = -1
	line, err := c.line()
	if err != nil {
		return err
	}
	if err := parseRequestLine(line, h); err != nil {
		return err
	}
	for {
		line, err := c.line()
		if err != nil {
			return err
		}
		if len(line) == 0 {
			return nil
		}
		if err := parseHeader(line, h); err != nil {
			return err
		}
	}
}

// line reads one head line without its line ending (valid until the next read).
func (c *conn) line() ([]byte, error) {
	b, err := c.br.ReadSlice('\n')
	c.headLen += len(b)
	if errors.Is(err, bufio.ErrBufferFull) {
		c.long = append(c.long[:0], b...)
		for errors.Is(err, bufio.ErrBufferFull) && c.headLen <= maxHeadBytes {
			b, err = c.br.ReadSlice('\n')
			c.headLen += len(b)
			c.long = append(c.long, b...)
		}
		b = c.long
	}
	if c.headLen > maxHeadBytes {
		return nil, &httpError{status: http.StatusRequestHeaderFieldsTooLarge, msg: fmt.Sprintf("request head longer than %d bytes", maxHeadBytes)}
	}
	if err != nil {
		return nil, err // EOF, reset, or the head deadline: nobody to answer
	}
	b = b[:len(b)-1]
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b, nil
}

// parseRequestLine reads "METHOD target HTTP/1.x" into h.route and h.http10.
func parseRequestLine(line []byte, h *head) error {
	method, rest, ok1 := bytes.Cut(line, []byte(" "))
	target, proto, ok2 := bytes.Cut(rest, []byte(" "))
	if !ok1 || !ok2 || len(method) == 0 || len(target) == 0 {
		return badRequest("malformed request line %q", clip(line))
	}
	switch string(proto) {
	case "HTTP/1.1":
	case "HTTP/1.0":
		h.http10 = true
	default:
		return &httpError{status: http.StatusHTTPVersionNotSupported, msg: fmt.Sprintf("protocol %q: only HTTP/1.0 and HTTP/1.1", clip(proto))}
	}
	if rest, ok := bytes.CutPrefix(target, []byte("http://")); ok { // absolute form
		target = []byte("/")
		if i := bytes.IndexByte(rest, '/'); i >= 0 {
			target = rest[i:]
		}
	}
	if i := bytes.IndexByte(target, '?'); i >= 0 {
		target = target[:i]
	}
	switch string(target) {
	case "/v1/completions", "/v1/chat/completions":
		h.route, h.allow = routeCompletions, "\r\nAllow: POST"
		if string(target) == "/v1/chat/completions" {
			h.route = routeChat
		}
		if string(method) != "POST" {
			h.route = routeBadMethod
		}
	case "/health":
		h.route, h.allow = routeHealth, "\r\nAllow: GET, HEAD"
		if string(method) != "GET" && string(method) != "HEAD" {
			h.route = routeBadMethod
		}
	}
	return nil
}

// parseHeader reads one "Name: value" line into h.
func parseHeader(line []byte, h *head) error {
	k, v, ok := bytes.Cut(line, []byte(":"))
	if !ok || len(k) == 0 || bytes.ContainsAny(k, " \t") {
		return badRequest("malformed header line %q", clip(line))
	}
	v = bytes.TrimSpace(v)
	switch {
	case bytes.EqualFold(k, []byte("Content-Length")):
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil || v[0] < '0' || v[0] > '9' || (h.contentLength >= 0 && n != h.contentLength) {
			return badRequest("bad Content-Length %q", clip(v))
		}
		h.contentLength = n
	case bytes.EqualFold(k, []byte("Transfer-Encoding")):
		if !bytes.EqualFold(v, []byte("chunked")) {
			return &httpError{status: http.StatusNotImplemented, msg: fmt.Sprintf("Transfer-Encoding %q: only chunked", clip(v))}
		}
		h.chunked = true
	case bytes.EqualFold(k, []byte("Connection")):
		h.connClose = h.connClose || containsTokenFold(v, "close")
		h.connKeepAlive = h.connKeepAlive || containsTokenFold(v, "keep-alive")
	case bytes.EqualFold(k, []byte("Expect")):
		if !bytes.EqualFold(v, []byte("100-continue")) {
			return &httpError{status: http.StatusExpectationFailed, msg: fmt.Sprintf("Expect %q: only 100-continue", clip(v))}
		}
		h.expect100 = true
	case bytes.EqualFold(k, []byte("X-Request-Id")):
		if h.requestID == "" {
			h.requestID = string(v)
		}
	}
	return nil
}

// readBody reads the request body framed by Content-Length or chunked
// coding (RFC 9112 §6.3, §7.1); no framing means no body. The result is
// valid until the next request.
func (c *conn) readBody(h *head) ([]byte, error) {
	if h.chunked && h.contentLength >= 0 {
		return nil, badRequest("both Transfer-Encoding: chunked and Content-Length")
	}
	if h.contentLength > maxBodyBytes {
		return nil, &httpError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("body of %d bytes: at most %d", h.contentLength, maxBodyBytes)}
	}
	if !h.chunked && h.contentLength <= 0 {
		return c.body[:0], nil
	}
	if h.expect100 && !h.http10 && c.br.Buffered() == 0 {
		if !c.write(append(c.out[:0], "HTTP/1.1 100 Continue\r\n\r\n"...)) {
			return nil, io.ErrClosedPipe
		}
	}
	if !h.chunked {
		n := int(h.contentLength)
		if cap(c.body) < n {
			c.body = make([]byte, n)
		}
		c.body = c.body[:n]
		_, err := io.ReadFull(c.br, c.body)
		return c.body, err
	}
	b := bytes.NewBuffer(c.body[:0])
	n, err := b.ReadFrom(io.LimitReader(httputil.NewChunkedReader(c.br), maxBodyBytes+1))
	c.body = b.Bytes()
	if err != nil {
		return nil, badRequest("chunked body: %v", err)
	}
	if n > maxBodyBytes {
		return nil, &httpError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("chunked body over %d bytes", maxBodyBytes)}
	}
	// The trailer section ends at a blank line.
	for {
		line, err := c.line()
		if err != nil {
			return nil, err
		}
		if len(line) == 0 {
			return c.body, nil
		}
	}
}

// appendHead appends a response head: status line, Date, the content type
// (none when empty), extra header lines (each starting "\r\n"),
// Content-Length (length ≥ 0) or chunked coding (chunked) or neither (the
// body ends when the connection closes), and the connection's fate.
func (c *conn) appendHead(b []byte, status int, contentType string, length int, chunked, keep bool, h *head, extra string) []byte {
	b = append(b, "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, ' ')
	b = append(b, http.StatusText(status)...)
	b = append(b, "\r\nDate: "...)
	b = time.Now().UTC().AppendFormat(b, http.TimeFormat)
	if contentType != "" {
		b = append(b, "\r\nContent-Type: "...)
		b = append(b, contentType...)
	}
	b = append(b, extra...)
	switch {
	case length >= 0:
		b = append(b, "\r\nContent-Length: "...)
		b = strconv.AppendInt(b, int64(length), 10)
	case chunked:
		b = append(b, "\r\nTransfer-Encoding: chunked"...)
	}
	switch {
	case !keep:
		b = append(b, "\r\nConnection: close"...)
	case h.http10:
		b = append(b, "\r\nConnection: keep-alive"...)
	}
	return append(b, "\r\n\r\n"...)
}

// writeError answers status with a JSON error body {"error":{"message":msg}};
// false when the connection must close.
func (c *conn) writeError(status int, msg string, keep bool, h *head, extra string) bool {
	q, _ := json.Marshal(msg) // a string always marshals
	n := len(`{"error":{"message":`) + len(q) + len("}}\n")
	b := c.appendHead(c.out[:0], status, "application/json", n, false, keep, h, extra)
	b = append(b, `{"error":{"message":`...)
	b = append(b, q...)
	b = append(b, "}}\n"...)
	return c.write(b) && keep
}

// write sends b with one Write and keeps its buffer for the next response;
// false when the client is gone.
func (c *conn) write(b []byte) bool {
	c.out = b[:0]
	_, err := c.nc.Write(b)
	return err == nil
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

// clip shortens b for an error message.
func clip(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "…"
	}
	return string(b)
}
