package loadgen

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// headParser reads an HTTP/1.1 response head from br (the reactor hands it
// a complete head, push.go).
type headParser struct {
	br *bufio.Reader
}

// respHead is what the client uses of a response head.
type respHead struct {
	status      int
	contentType string
	chunked     bool
	length      int64 // Content-Length, −1 when absent
	keepAlive   bool
	bytes       int // head bytes read (0: nothing arrived)
}

// readHead reads a response's status line and headers (RFC 9112 §4, §5),
// skipping interim 1xx responses.
func (lc *headParser) readHead() (respHead, error) {
	h := respHead{length: -1}
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
		h = respHead{length: -1, bytes: h.bytes} // interim 1xx: the real head follows
	}
}

// headers reads header lines up to the blank line into h.
func (lc *headParser) headers(h *respHead) error {
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
func (lc *headParser) line(h *respHead) ([]byte, error) {
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
