package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptrace"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/transferlab/transferlab/traces"
)

// Token ids for synthetic prompts stay in [tokenIDBase, tokenIDBase+tokenIDSpan),
// valid in any vocabulary of ≥ 32,000 entries and distinct per request so no
// two requests share a KV prefix by accident.
const (
	tokenIDBase = 1000
	tokenIDSpan = 30000
	// maxErrorBody bounds how much of an error body is read (bytes).
	maxErrorBody = 4 << 10
	// maxBody bounds a non-streaming response body (bytes).
	maxBody = 64 << 20
	// maxDrain bounds what is read after [DONE] so the connection can be reused (bytes).
	maxDrain = 64 << 10
	// sseBufSize is the SSE reader's initial buffer (bytes); it grows for longer lines.
	sseBufSize = 1024
)

// promptWords are one token each in common BPE vocabularies (GPT, Llama);
// a text prompt of n words is therefore about n tokens, and the server's
// usage.prompt_tokens is checked against it (Record.PromptMismatch).
var promptWords = [...]string{" the", " of", " and", " to", " in"}

// client sends one request and fills its Record, through the lean HTTP/1.1
// client (lean.go) for plain http:// targets, else through net/http.
type client struct {
	cfg   *config
	http  *http.Client   // nil when lean is used
	lean  *leanTransport // nil when http is used
	url   string
	since func() time.Duration
}

func newClient(cfg *config, baseURL string, since func() time.Duration) *client {
	path := "/v1/completions"
	if cfg.endpoint == EndpointChat {
		path = "/v1/chat/completions"
	}
	c := &client{cfg: cfg, url: baseURL + path, since: since}
	if cfg.client == nil && cfg.lean && strings.HasPrefix(baseURL, "http://") {
		if lt, err := newLeanTransport(c.url); err == nil {
			c.lean = lt
			return c
		}
		// An unparsable URL goes through net/http, which reports it per request.
	}
	c.http = cfg.client
	if c.http == nil {
		c.http = NewHTTPClient()
	}
	return c
}

// closeIdle closes the idle connections of a client Replay created.
func (c *client) closeIdle() {
	if c.lean != nil {
		c.lean.closeIdle()
		return
	}
	c.http.CloseIdleConnections()
}

// body appends the JSON request body for req to b.
func (c *client) body(b []byte, req *traces.Request) []byte {
	b = append(b, '{')
	if c.cfg.model != "" {
		b = append(b, `"model":`...)
		b = strconv.AppendQuote(b, c.cfg.model)
		b = append(b, ',')
	}
	if c.cfg.endpoint == EndpointChat {
		b = append(b, `"messages":[{"role":"user","content":"`...)
		b = appendPromptText(b, req.InputTokens)
		b = append(b, `"}]`...)
	} else if c.cfg.promptText {
		b = append(b, `"prompt":"`...)
		b = appendPromptText(b, req.InputTokens)
		b = append(b, '"')
	} else {
		b = append(b, `"prompt":[`...)
		seed := req.ID * 7919
		for j := 0; j < req.InputTokens; j++ {
			if j > 0 {
				b = append(b, ',')
			}
			id := tokenIDBase + (seed+j*104729)%tokenIDSpan
			if id < tokenIDBase {
				id += tokenIDSpan
			}
			b = strconv.AppendInt(b, int64(id), 10)
		}
		b = append(b, ']')
	}
	b = append(b, `,"max_tokens":`...)
	b = strconv.AppendInt(b, int64(req.OutputTokens), 10)
	if c.cfg.ignoreEOS {
		b = append(b, `,"ignore_eos":true`...)
	}
	if c.cfg.stream {
		b = append(b, `,"stream":true,"stream_options":{"include_usage":true}}`...)
	} else {
		b = append(b, `,"stream":false}`...)
	}
	return b
}

// appendPromptText appends n one-token words (JSON-safe, no escapes needed).
func appendPromptText(b []byte, n int) []byte {
	for j := 0; j < n; j++ {
		w := promptWords[j%len(promptWords)]
		if j == 0 {
			w = w[1:]
		}
		b = append(b, w...)
	}
	return b
}

// reqState maps a request's transport or read error to its final state:
// cancelled when the run ended, timeout when the request's own deadline
// passed (net/http: rctx's deadline; lean: the connection deadline), else
// the fallback.
type reqState struct {
	runCtx context.Context
	rctx   context.Context // net/http only: the request's timeout context
}

func (s *reqState) fail(err error, fallback State) State {
	if s.runCtx.Err() != nil {
		return StateCancelled
	}
	if s.rctx != nil && errors.Is(s.rctx.Err(), context.DeadlineExceeded) {
		return StateTimeout
	}
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return StateTimeout
	}
	return fallback
}

// response is what the readers use of an HTTP response, from either client.
type response struct {
	status      int
	contentType string
	body        io.Reader
}

// do sends req and fills rec (SentAt onwards). It never returns an error: a
// failed request is data, kept in rec.State and rec.Error.
func (c *client) do(runCtx context.Context, req *traces.Request, rec *Record) {
	if c.lean != nil {
		c.doLean(runCtx, req, rec)
		return
	}
	rctx, cancel := context.WithTimeout(runCtx, c.cfg.timeout)
	defer cancel()
	rs := reqState{runCtx: runCtx, rctx: rctx}
	var wrote atomic.Int64
	trace := &httptrace.ClientTrace{WroteHeaders: func() { wrote.Store(int64(c.since())) }}
	body := c.body(make([]byte, 0, 64+7*req.InputTokens), req)
	hreq, err := http.NewRequestWithContext(httptrace.WithClientTrace(rctx, trace), http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		rec.SentAt = c.since()
		rec.State, rec.Error = StateHTTPError, fmt.Sprintf("building request: %v", err)
		return
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set(RequestIDHeader, strconv.Itoa(req.ID))
	if c.cfg.stream {
		hreq.Header.Set("Accept", "text/event-stream")
	}
	rec.DispatchedAt = c.since()
	resp, err := c.http.Do(hreq)
	rec.SentAt = time.Duration(wrote.Load())
	if rec.SentAt == 0 {
		rec.SentAt = rec.DispatchedAt
	}
	if err != nil {
		rec.State, rec.Error = rs.fail(err, StateHTTPError), err.Error()
		return
	}
	defer resp.Body.Close()
	c.read(&rs, response{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), body: resp.Body}, req, rec)
}

// doLean is do through the lean client: one Write of a pooled buffer on an
// idle or new connection, the head read by hand, the body on this
// goroutine. The request's timeout is the connection's deadline; a run that
// ends moves the deadline into the past (context.AfterFunc, no goroutine).
func (c *client) doLean(runCtx context.Context, req *traces.Request, rec *Record) {
	t := c.lean
	deadline := time.Now().Add(c.cfg.timeout)
	rs := reqState{runCtx: runCtx}
	w := t.getWire()
	defer t.putWire(w)
	w.body = c.body(w.body[:0], req)
	w.wire = t.appendHead(w.wire[:0], req.ID, c.cfg.stream, len(w.body))
	w.wire = append(w.wire, w.body...)
	rec.DispatchedAt = c.since()

	var lc *leanConn
	var head leanHead
	var stop func() bool
	for attempt := 0; ; attempt++ {
		var err error
		lc, err = t.get(runCtx, deadline, attempt > 0)
		if err != nil {
			rec.SentAt = c.since()
			rec.State, rec.Error = rs.fail(err, StateHTTPError), fmt.Sprintf("POST %s: %v", c.url, err)
			return
		}
		if err := lc.nc.SetDeadline(deadline); err != nil {
			_ = lc.nc.Close()
			rec.SentAt = c.since()
			rec.State, rec.Error = StateHTTPError, fmt.Sprintf("POST %s: %v", c.url, err)
			return
		}
		nc := lc.nc
		stop = context.AfterFunc(runCtx, func() { _ = nc.SetDeadline(aLongTimeAgo) })
		rec.SentAt = c.since()
		head, err = lc.roundTrip(w.wire)
		if err == nil {
			break
		}
		stop()
		_ = lc.nc.Close()
		if errors.Is(err, errStaleConn) && attempt == 0 && runCtx.Err() == nil {
			continue
		}
		rec.State, rec.Error = rs.fail(err, StateHTTPError), fmt.Sprintf("POST %s: %v", c.url, err)
		return
	}
	var body leanBody
	body.init(lc, &head)
	c.read(&rs, response{status: head.status, contentType: head.contentType, body: &body}, req, rec)
	reusable := head.keepAlive && body.done && (head.chunked || head.length >= 0)
	if stop() && reusable {
		t.put(lc)
		return
	}
	_ = lc.nc.Close()
}

// read reads resp into rec: the error body of a non-200 status, else the
// stream or the whole body, then the output-token count.
func (c *client) read(rs *reqState, resp response, req *traces.Request, rec *Record) {
	rec.HTTPStatus = resp.status
	if resp.status != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.body, maxErrorBody))
		rec.State = StateHTTPError
		rec.Error = fmt.Sprintf("HTTP %d: %s", resp.status, errorMessage(bytes.TrimSpace(b)))
		return
	}
	var evs eventLog
	var u usageField
	if c.cfg.stream {
		u = c.readStream(rs, resp, rec, &evs)
	} else {
		u = c.readBody(rs, resp, rec, &evs)
	}
	rec.Events = evs.appendTo(make([]TokenEvent, 0, evs.n))
	setOutputTokens(rec, u)
}

// setOutputTokens applies DESIGN.md's output_tokens rule: usage when
// reported, else the count of token-bearing events; a disagreement is flagged.
func setOutputTokens(rec *Record, u usageField) {
	ev := rec.EventTokens()
	if u.Set {
		rec.OutputTokens, rec.OutputTokensSource = u.CompletionTokens, SourceUsage
		rec.UsageMismatch = ev != u.CompletionTokens
		rec.PromptTokens = u.PromptTokens
		return
	}
	rec.OutputTokens, rec.OutputTokensSource = ev, SourceEvents
}

// readStream parses an SSE response into rec and returns the usage seen.
func (c *client) readStream(rs *reqState, resp response, rec *Record, evs *eventLog) usageField {
	var u usageField
	if mt, _, _ := mime.ParseMediaType(resp.contentType); mt != "text/event-stream" {
		b, _ := io.ReadAll(io.LimitReader(resp.body, maxErrorBody))
		rec.State = StateStreamError
		rec.Error = fmt.Sprintf("HTTP 200 with Content-Type %q, not text/event-stream: %q", resp.contentType, clip(bytes.TrimSpace(b), 200))
		return u
	}
	sr := newSSEReader(resp.body, c.since, make([]byte, sseBufSize))
	var ch chunk
	var lastAt time.Duration
	ended := false // finish_reason or usage seen: a stream without [DONE] may end there
	for n := 1; ; n++ {
		ev, err := sr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			rec.State = rs.fail(err, StateStreamError)
			rec.Error = fmt.Sprintf("SSE event %d: %v", n, err)
			return u
		}
		if rec.FirstMessageAt == 0 {
			rec.FirstMessageAt = ev.At
		}
		if string(ev.Name) == "error" {
			rec.State = StateStreamError
			rec.Error = fmt.Sprintf("SSE event %d: server error event: %s", n, errorMessage(ev.Data))
			return u
		}
		if string(ev.Data) == "[DONE]" {
			rec.EndAt = ev.At
			rec.State = StateOK
			_, _ = io.CopyN(io.Discard, resp.body, maxDrain)
			return u
		}
		if err := decodeChunk(ev.Data, &ch); err != nil {
			rec.State = StateStreamError
			rec.Error = fmt.Sprintf("SSE event %d: invalid JSON: %v: %q", n, err, clip(ev.Data, 200))
			return u
		}
		if msg := ch.errorText(); msg != "" {
			rec.State = StateStreamError
			rec.Error = fmt.Sprintf("SSE event %d: server error mid-stream: %s", n, msg)
			return u
		}
		lastAt = ev.At
		c.addChoices(&ch, ev.At, rec, evs, 1)
		if rec.FinishReason != "" {
			ended = true
		}
		if ch.Usage.Set {
			u = ch.Usage
			ended = true
		}
	}
	if !ended {
		rec.State = StateStreamError
		rec.Error = "stream ended without [DONE], finish_reason or usage"
		return u
	}
	// Some servers close after the final usage/finish event without [DONE].
	rec.EndAt = lastAt
	rec.State = StateOK
	return u
}

// addChoices appends one token event when any choice carries text (n=1 is
// always requested), with tokens tokens, and notes the finish reason.
func (c *client) addChoices(ch *chunk, at time.Duration, rec *Record, evs *eventLog, tokens int) {
	ans, rsn := false, false
	for i := range ch.Choices {
		cc := &ch.Choices[i]
		ans = ans || cc.answer()
		rsn = rsn || cc.reasoning()
		if cc.FinishReason != "" {
			rec.FinishReason = string(cc.FinishReason)
		}
	}
	if ans || rsn {
		evs.add(TokenEvent{At: at, Tokens: tokens, Reasoning: !ans})
	}
}

// readBody parses a non-streaming response into rec: one event at the time
// the whole body was read, carrying usage.completion_tokens tokens.
func (c *client) readBody(rs *reqState, resp response, rec *Record, evs *eventLog) usageField {
	b, err := io.ReadAll(io.LimitReader(resp.body, maxBody))
	at := c.since()
	if err != nil {
		rec.State = rs.fail(err, StateStreamError)
		rec.Error = fmt.Sprintf("reading body: %v", err)
		return usageField{}
	}
	rec.FirstMessageAt = at
	var ch chunk
	if err := decodeChunk(b, &ch); err != nil {
		rec.State = StateStreamError
		rec.Error = fmt.Sprintf("invalid JSON body: %v: %q", err, clip(b, 200))
		return usageField{}
	}
	if msg := ch.errorText(); msg != "" {
		rec.State = StateStreamError
		rec.Error = "server error in body: " + msg
		return usageField{}
	}
	tokens := 1
	if ch.Usage.Set && ch.Usage.CompletionTokens > 0 {
		tokens = ch.Usage.CompletionTokens
	}
	c.addChoices(&ch, at, rec, evs, tokens)
	rec.EndAt = at
	rec.State = StateOK
	return ch.Usage
}
