package loadgen

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// The purpose-built client's sizes and limits.
const (
	// headReadBuf is the head parser's read buffer (bytes); a longer head
	// line is assembled on the heap.
	headReadBuf = 512
	// maxIdleConns caps the idle keep-alive connections one client keeps;
	// a connection freed while the pool is full is closed.
	maxIdleConns = 4096
	// dialTimeout bounds resolving the target's host (the request's own
	// timeout bounds each connect too, whichever ends first).
	dialTimeout = 10 * time.Second
	// maxHeadLine bounds one status or header line of a response (bytes).
	maxHeadLine = 64 << 10
	// maxHeadLines bounds the number of header lines of a response.
	maxHeadLines = 256
)

// aLongTimeAgo is a deadline in the past: setting it makes a wait return at
// once (os.ErrDeadlineExceeded).
var aLongTimeAgo = time.Unix(1, 0)

// target is one plain http:// URL as the reactor sends to it: the address
// dialled, the request head, and a pool of request buffers (each request is
// written with one write(2) of one buffer).
type target struct {
	addr string // host:port dialled
	host string // Host header
	path string // request target (path and query)
	// extra holds the caller's headers (WithHeaders), rendered once as
	// "Name: value\r\n" lines.
	extra []byte

	wire sync.Pool // *reqWire
}

// reqWire is a pooled pair of buffers for building one request.
type reqWire struct {
	body []byte
	wire []byte
}

// newTarget parses rawURL, which must be http://host[:port]/path; every
// request carries the headers h (rendered once, here).
func newTarget(rawURL string, h http.Header) (*target, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" || u.Host == "" || u.User != nil {
		return nil, fmt.Errorf("%q is not a plain http://host URL", rawURL)
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	var extra bytes.Buffer
	if err := h.Write(&extra); err != nil {
		return nil, err
	}
	return &target{addr: addr, host: u.Host, path: u.RequestURI(), extra: extra.Bytes()}, nil
}

func (t *target) getWire() *reqWire {
	if w, ok := t.wire.Get().(*reqWire); ok {
		return w
	}
	return &reqWire{}
}

// putWire returns w to the pool unless a huge prompt made it large.
func (t *target) putWire(w *reqWire) {
	if cap(w.wire) <= 64<<10 {
		t.wire.Put(w)
	}
}

// appendHead appends the request line and headers for a body of n bytes.
func (t *target) appendHead(b []byte, id int, stream bool, n int) []byte {
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
