package loadgentest

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strconv"
	"time"
)

// request is what the server reads of a completion request body.
type request struct {
	MaxTokens     int  `json:"max_tokens"`
	Stream        bool `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Prompt   json.RawMessage `json:"prompt"`
	Messages json.RawMessage `json:"messages"`
}

// event is one SSE event as sent: raw (an HTTP/1.0 body, unframed) and as
// one chunk of chunked coding ("<hex size>\r\n<event>\r\n"), both encoded
// once so that sending a token event is one Write with no allocation.
type event struct{ raw, chunk []byte }

func newEvent(s string) event {
	return event{raw: []byte(s), chunk: appendChunk(nil, []byte(s))}
}

// wire is the event's bytes for a chunked or unframed body.
func (e event) wire(chunked bool) []byte {
	if chunked {
		return e.chunk
	}
	return e.raw
}

// The server's SSE events.
var (
	compEvent = newEvent(`data: {"id":"cmpl-0","object":"text_completion","model":"fast","choices":[{"index":0,"text":" tok","finish_reason":null}]}` + "\n\n")
	chatRole  = newEvent(`data: {"id":"chatcmpl-0","object":"chat.completion.chunk","model":"fast","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n")
	chatEvent = newEvent(`data: {"id":"chatcmpl-0","object":"chat.completion.chunk","model":"fast","choices":[{"index":0,"delta":{"content":" tok"},"finish_reason":null}]}` + "\n\n")
	doneEvent = newEvent("data: [DONE]\n\n")
)

// Response pieces.
const (
	streamHeaders = "\r\nCache-Control: no-cache"
	lastChunk     = "0\r\n\r\n" // the last chunk and an empty trailer section
	choiceText    = `{"index":0,"text":" tok","finish_reason":"length"}`
	choiceChat    = `{"index":0,"message":{"role":"assistant","content":" tok"},"finish_reason":"length"}`
)

// appendChunk appends p as one chunk of chunked coding (RFC 9112 §7.1).
func appendChunk(b, p []byte) []byte {
	b = strconv.AppendInt(b, int64(len(p)), 16)
	b = append(b, "\r\n"...)
	b = append(b, p...)
	return append(b, "\r\n"...)
}

// appendUsage appends `"usage":{…}` for prompt and n output tokens.
func appendUsage(b []byte, prompt, n int) []byte {
	b = append(b, `"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt+n), 10)
	return append(b, '}')
}

// complete answers a completion request whose body has been read; false
// when the connection must close.
func (c *conn) complete(h *head, body []byte, keep bool) bool {
	var req request
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&req); err != nil {
		return c.writeError(http.StatusBadRequest, "bad JSON: "+err.Error(), keep, h, "")
	}
	n := req.MaxTokens
	if c.s.cfg.Tokens > 0 {
		n = c.s.cfg.Tokens
	}
	if n < 1 {
		return c.writeError(http.StatusBadRequest, "max_tokens must be ≥ 1", keep, h, "")
	}
	prompt := promptLen(req.Prompt)
	chat := h.route == routeChat
	if !c.wait(c.s.cfg.TTFT) {
		return false
	}
	if !req.Stream {
		choice := choiceText
		if chat {
			choice = choiceChat
		}
		var buf [256]byte
		body := append(buf[:0], `{"id":"x","choices":[`...)
		body = append(body, choice...)
		body = append(body, "],"...)
		body = appendUsage(body, prompt, n)
		body = append(body, '}')
		b := c.appendHead(c.out[:0], http.StatusOK, "application/json", len(body), false, keep, h, "")
		ok := c.write(append(b, body...))
		if ok {
			c.s.Events.Add(1)
		}
		return ok && keep
	}
	if !req.StreamOptions.IncludeUsage {
		c.s.NoUsageAsk.Add(1)
	}
	return c.stream(h, chat, req.StreamOptions.IncludeUsage, prompt, n, keep)
}

// stream sends n token events (chat: after a role-only event), the usage
// event when asked for, and [DONE]. The head and the first events go in one
// Write; each later token event is one Write of its pre-encoded chunk (or
// Config.EventsPerWrite of them, pre-encoded as one block). An
// HTTP/1.0 client gets an unframed body ended by closing the connection.
func (c *conn) stream(h *head, chat, usage bool, prompt, n int, keep bool) bool {
	c.s.Open.Add(1)
	defer c.s.Open.Add(-1)
	chunked := !h.http10
	keep = keep && chunked
	ev := compEvent
	b := c.appendHead(c.out[:0], http.StatusOK, "text/event-stream", -1, chunked, keep, h, streamHeaders)
	if chat {
		ev = chatEvent
		b = append(b, chatRole.wire(chunked)...)
	}
	tok := ev.wire(chunked)
	long := false
	if every := c.s.cfg.LongLineEvery; every > 0 {
		id, err := strconv.Atoi(h.requestID)
		long = err == nil && id%every == 0
	}
	g, group := 1, []byte(nil)
	if c.s.cfg.ITL <= 0 && c.s.cfg.EventsPerWrite > 1 {
		g, group = c.s.cfg.EventsPerWrite, c.s.groups[b2i(chat)][b2i(chunked)]
	}
	for k := 0; k < n; {
		m := 1 // token events in this Write
		if k == 0 {
			if !c.write(append(b, tok...)) {
				return false
			}
			if long {
				if _, err := c.nc.Write(c.s.long[b2i(chunked)]); err != nil {
					return false
				}
			}
		} else {
			if !c.wait(c.s.cfg.ITL) {
				return false
			}
			m = min(g, n-k)
			w := tok
			if m > 1 {
				w = group[:m*len(tok)]
			}
			if _, err := c.nc.Write(w); err != nil {
				return false
			}
		}
		c.s.Events.Add(int64(m))
		if k == 0 && c.s.cfg.Hold != nil && !c.hold() {
			return false
		}
		k += m
	}
	b = c.out[:0]
	if usage {
		var buf [160]byte
		p := append(buf[:0], `data: {"id":"x","choices":[],`...)
		extra := 0
		if long && c.s.cfg.LongLineData {
			extra = 1 // the long data event's token
		}
		p = appendUsage(p, prompt, n+extra)
		p = append(p, "}\n\n"...)
		if chunked {
			b = appendChunk(b, p)
		} else {
			b = append(b, p...)
		}
	}
	b = append(b, doneEvent.wire(chunked)...)
	if chunked {
		b = append(b, lastChunk...)
	}
	return c.write(b) && keep
}

// b2i is 1 for true, 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// wait sleeps d (nothing when d ≤ 0); false when the client hung up or the
// server cut the stream first. It waits by reading the connection with a
// deadline d ahead (the runtime's netpoller timer, no goroutine): the read
// returns early only if the client closes (or sends more bytes, which stay
// buffered for the next request while the rest of d is slept out).
func (c *conn) wait(d time.Duration) bool {
	if d <= 0 {
		return true
	}
	until := time.Now().Add(d)
	if c.br.Buffered() == 0 {
		_ = c.nc.SetReadDeadline(until)
		_, err := c.br.Peek(1)
		_ = c.nc.SetReadDeadline(time.Time{})
		if err != nil {
			return errors.Is(err, os.ErrDeadlineExceeded)
		}
	}
	t := time.NewTimer(time.Until(until))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.s.killed:
		return false
	}
}

// aLongTimeAgo is a deadline in the past: setting it makes a blocked read return at once.
var aLongTimeAgo = time.Unix(1, 0)

// hold waits, after a stream's first token event, until Config.Hold is
// closed; false when the client hung up or the server cut the stream
// first. A goroutine reads the connection meanwhile to see a hang-up.
func (c *conn) hold() bool {
	if c.br.Buffered() == 0 {
		gone := make(chan error, 1)
		go func() {
			_, err := c.br.Peek(1)
			gone <- err
		}()
		select {
		case <-c.s.cfg.Hold:
			_ = c.nc.SetReadDeadline(aLongTimeAgo)
			err := <-gone
			_ = c.nc.SetReadDeadline(time.Time{})
			return err == nil || errors.Is(err, os.ErrDeadlineExceeded)
		case err := <-gone:
			if err != nil {
				return false
			}
		case <-c.s.killed:
			<-gone // Close closes the connection, which ends the read
			return false
		}
	}
	select {
	case <-c.s.cfg.Hold:
		return true
	case <-c.s.killed:
		return false
	}
}

// promptLen counts a token-id array's elements, or the words of a string prompt.
func promptLen(raw json.RawMessage) int {
	if len(raw) == 0 {
		return 0
	}
	if raw[0] == '[' {
		n := 0
		depth := 0
		empty := true
		for _, c := range raw {
			switch c {
			case '[':
				depth++
			case ']':
				depth--
			case ',':
				if depth == 1 {
					n++
				}
			case ' ', '\n', '\t', '\r':
			default:
				empty = false
			}
		}
		if empty {
			return 0
		}
		return n + 1
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return 0
	}
	n := 0
	in := false
	for _, c := range s {
		if c == ' ' {
			in = false
		} else if !in {
			in = true
			n++
		}
	}
	return n
}
