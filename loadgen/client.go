package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/transferlab/transferlab/traces"
)

const (
	// maxErrorBody bounds how much of an error body is read (bytes).
	maxErrorBody = 4 << 10
	// maxBody bounds a non-streaming response body (bytes).
	maxBody = 64 << 20
	// maxDrain bounds what is read after [DONE] so the connection can be reused (bytes).
	maxDrain = 64 << 10
	// sseBufSize is the SSE reader's initial buffer (bytes); it grows for longer lines.
	sseBufSize = 512
)

// client sends requests and fills their Records through the reactor
// (reactor_linux.go) for plain http:// targets when cfg's transport is
// TransportReactor, else through net/http.
type client struct {
	cfg   *config
	tr    transport // the reactor or net/http
	url   string
	epoch time.Time            // the run's clock: offsets count from here (monotonic)
	since func() time.Duration // time.Since(epoch)
	heads sync.Pool            // *headReader for the reactor's head parser (push.go)
}

// transport is how requests reach the server: the reactor (reactor_linux.go,
// plain http:// on Linux) or net/http (httpTransport). start sends req and
// calls done once rec is complete, without waiting for the network; close
// ends what the transport owns once nothing is in flight. Either fills a
// record through the same per-event steps (client.read, pushResponse), so a
// record does not depend on the transport.
type transport interface {
	start(runCtx context.Context, req *traces.Request, rec *Record, done func())
	close()
}

// loopHelper is a transport with an event loop that can run the open loop's
// dispatching step between the events it handles (the reactor): setHelper
// installs fn, nil removes it. fn must be cheap when nothing is due and
// must never block.
type loopHelper interface {
	setHelper(fn func())
}

// httpTransport sends through net/http, each request on a goroutine of its
// own. owned: Replay created the http.Client (a WithHTTPClient client is the
// caller's, its idle connections left alone).
type httpTransport struct {
	c     *client
	http  *http.Client
	owned bool
}

func (t *httpTransport) start(runCtx context.Context, req *traces.Request, rec *Record, done func()) {
	go func() {
		t.do(runCtx, req, rec)
		done()
	}()
}

func (t *httpTransport) close() {
	if t.owned {
		t.http.CloseIdleConnections()
	}
}

// newClient returns the client for cfg's transport, its records' offsets
// counted from start. The reactor's event loop lives until close; runCtx's
// end cancels its in-flight requests.
func newClient(runCtx context.Context, cfg *config, baseURL string, start time.Time) (*client, error) {
	c := &client{cfg: cfg, url: baseURL + cfg.endpoint.Path(), epoch: start, since: func() time.Duration { return time.Since(start) }}
	var lt *target
	if cfg.client == nil && strings.HasPrefix(baseURL, "http://") {
		lt, _ = newTarget(c.url, cfg.headers) // nil when unparsable: net/http reports it per request
	}
	switch {
	case lt != nil && cfg.transport == TransportReactor:
		r, err := newReactor(c, lt, runCtx)
		if err != nil {
			return nil, fmt.Errorf("loadgen: transport %s: %w", TransportReactor, err)
		}
		c.tr = r
		return c, nil
	}
	ht := &httpTransport{c: c, http: cfg.client}
	if ht.http == nil {
		ht.http, ht.owned = NewHTTPClient(), true
		ht.http.Transport.(*http.Transport).TLSClientConfig = cfg.tls
	}
	c.tr = ht
	return c, nil
}

// close ends the transport's own resources once nothing is in flight: the
// reactor's loop and sockets, or the idle connections of a client Replay
// created.
func (c *client) close() { c.tr.close() }

// start sends req and calls done once rec is complete (transport.start).
func (c *client) start(runCtx context.Context, req *traces.Request, rec *Record, done func()) {
	c.tr.start(runCtx, req, rec, done)
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
		b = appendPromptText(b, req, c.cfg.blockTokens)
		b = append(b, `"}]`...)
	} else if c.cfg.promptText {
		b = append(b, `"prompt":"`...)
		b = appendPromptText(b, req, c.cfg.blockTokens)
		b = append(b, '"')
	} else {
		b = append(b, `"prompt":[`...)
		b = appendPromptIDs(b, req, c.cfg.blockTokens)
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

// reqState maps a request's transport or read error to its final state:
// cancelled when the run ended, timeout when the request's own deadline
// passed (net/http: rctx's deadline; the reactor: its deadline heap), else
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
	if ht, ok := c.tr.(*httpTransport); ok {
		ht.do(runCtx, req, rec) // on this goroutine: no hand-off
		return
	}
	ended := make(chan struct{})
	c.tr.start(runCtx, req, rec, func() { close(ended) })
	<-ended
}

// do is client.do through net/http, on the calling goroutine.
func (t *httpTransport) do(runCtx context.Context, req *traces.Request, rec *Record) {
	c := t.c
	body := c.body(make([]byte, 0, 64+7*req.InputTokens), req)
	rec.DispatchedAt = c.since() // then the deadline starts, as on the reactor
	rctx, cancel := context.WithTimeout(runCtx, c.cfg.timeout)
	defer cancel()
	rs := reqState{runCtx: runCtx, rctx: rctx}
	var wrote atomic.Int64
	trace := &httptrace.ClientTrace{WroteHeaders: func() { wrote.Store(int64(c.since())) }}
	hreq, err := http.NewRequestWithContext(httptrace.WithClientTrace(rctx, trace), http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		rec.SentAt = c.since()
		rec.State, rec.Error = StateHTTPError, fmt.Sprintf("building request: %v", err)
		return
	}
	for k, v := range c.cfg.headers {
		hreq.Header[k] = v
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set(RequestIDHeader, strconv.Itoa(req.ID))
	if c.cfg.stream {
		hreq.Header.Set("Accept", "text/event-stream")
	}
	resp, err := t.http.Do(hreq)
	rec.SentAt = time.Duration(wrote.Load())
	if rec.SentAt == 0 {
		rec.SentAt = rec.DispatchedAt
	}
	if err != nil {
		rec.State, rec.Error = rs.fail(err, StateHTTPError), err.Error()
		return
	}
	defer resp.Body.Close()
	c.read(&rs, response{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), body: resp.Body}, rec)
}

// read reads resp into rec: the error body of a non-200 status, else the
// stream or the whole body, then the output-token count.
func (c *client) read(rs *reqState, resp response, rec *Record) {
	rec.HTTPStatus = resp.status
	if resp.status != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.body, maxErrorBody))
		httpError(resp.status, b, rec)
		return
	}
	c.cfg.observeHead(rec)
	st := &streamRead{c: c, rs: rs, rec: rec}
	if c.cfg.stream {
		st.stream(resp)
	} else {
		b, err := io.ReadAll(io.LimitReader(resp.body, maxBody))
		st.whole(b, c.since(), err)
	}
	st.finish()
}

// httpError keeps the status and the server's message of an error response
// whose body (up to maxErrorBody bytes) is b.
func httpError(status int, b []byte, rec *Record) {
	rec.State = StateHTTPError
	rec.Error = fmt.Sprintf("HTTP %d: %s", status, errorMessage(bytes.TrimSpace(b)))
}

// streamRead is one response's parse state. It lives on the heap, one
// allocation per request, so that the goroutine blocked reading the next
// event keeps a shallow stack (the GC then shrinks it; DESIGN: memory per
// in-flight request).
type streamRead struct {
	c   *client
	rs  *reqState
	rec *Record
	sse sseReader
	ch  chunk
	// memo decodes data payloads into ch (ch is touched by nothing else
	// while memo.field is set).
	memo chunkMemo
	evs  eventLog
	u    usageField
	// n is the number of the next SSE event (from 1), for error messages.
	n int
	// lastAt is when the last data event arrived.
	lastAt time.Duration
	// ended is set once a finish_reason was seen: a stream without [DONE]
	// may end there (or at the usage chunk that follows it). Usage alone
	// never ends a stream: servers that send it per chunk send it on a
	// stream cut short too.
	ended bool
	// counted is the sum of the token events' counts so far.
	counted int
	// usageGap is set once a data event came without usage: usage is then
	// not per chunk, and its deltas do not count an event's tokens.
	usageGap bool
	buf      [sseBufSize]byte
}

// finish builds the record's events and output-token count (status 200).
func (st *streamRead) finish() {
	st.sse.release()
	st.rec.Events = st.evs.appendTo(make([]TokenEvent, 0, st.evs.n))
	setOutputTokens(st.rec, st.u)
}

// setOutputTokens applies DESIGN.md's output_tokens rule: usage when
// reported, else the sum of the token events' counts; a disagreement is flagged.
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

// stream parses an SSE response into rec and keeps the usage seen in st.u.
func (st *streamRead) stream(resp response) {
	if !mediaTypeIs(resp.contentType, "text/event-stream") {
		b, _ := io.ReadAll(io.LimitReader(resp.body, maxErrorBody))
		notEventStream(resp.contentType, b, st.rec)
		return
	}
	st.sse.r, st.sse.since, st.sse.buf = resp.body, st.c.since, st.buf[:]
	if st.events() {
		_, _ = io.CopyN(io.Discard, resp.body, maxDrain) // read on so the connection can be reused
	}
}

// events applies the events the SSE reader returns until the stream ends
// for the record: true at [DONE].
func (st *streamRead) events() bool {
	for {
		ev, err := st.sse.next()
		if err == io.EOF {
			st.eof()
			return false
		}
		if err != nil {
			st.failRead(err)
			return false
		}
		if st.event(ev) {
			return st.rec.State == StateOK
		}
	}
}

// event applies one SSE event to the record; true when the stream is over
// for the record ([DONE], or a failure already recorded).
func (st *streamRead) event(ev sseEvent) bool {
	rec := st.rec
	st.n++
	if rec.FirstMessageAt == 0 {
		rec.FirstMessageAt = ev.At
	}
	if string(ev.Name) == "error" {
		st.failEvent("server error event", errorMessage(ev.payload()))
		return true
	}
	if ev.long == nil && string(ev.Data) == "[DONE]" {
		rec.EndAt = ev.At
		rec.State = StateOK
		return true
	}
	ch, err := st.decode(&ev)
	if err != nil {
		st.failJSON(err, ev.payload())
		return true
	}
	if msg := ch.errorText(); msg != "" {
		st.failEvent("server error mid-stream", msg)
		return true
	}
	st.lastAt = ev.At
	tokens, reasoning := noteChoices(ch, rec)
	u := ch.Usage
	if tokens > 0 {
		if u.Set && !st.usageGap {
			// Usage on every chunk so far (vLLM's continuous_usage_stats):
			// the tokens generated since the last token event are this
			// event's, including any that came in chunks without text.
			tokens = max(1, u.CompletionTokens-st.counted)
		}
		st.counted += tokens
		st.token(TokenEvent{At: ev.At, Tokens: tokens, Reasoning: reasoning})
	}
	if rec.FinishReason != "" {
		st.ended = true
	}
	if u.Set {
		st.u = u
	} else {
		st.usageGap = true
	}
	return false
}

// decode returns the event's data decoded as a chunk: decoded as it arrived
// for a long data line (sseEvent.long), else now, into st.ch.
func (st *streamRead) decode(ev *sseEvent) (*chunk, error) {
	if ev.long != nil {
		if ch, err := ev.long.result(); err == nil {
			return ch, nil
		}
		// The fast scanner gave up: encoding/json decides, on the whole
		// payload, after its end (chunk_scan.go).
		data := ev.long.bytes()
		st.sse.work += int64(len(data))
		st.memo.field = nil
		return &st.ch, decodeChunkJSON(data, &st.ch)
	}
	st.sse.work += int64(len(ev.Data))
	return &st.ch, st.memo.decode(ev.Data, &st.ch)
}

// eof ends a stream whose body ended cleanly without [DONE]: ok after a
// finish_reason (some servers close after the final finish or usage event
// without [DONE]), else a stream error, the stream having been cut short.
func (st *streamRead) eof() {
	if !st.ended {
		st.rec.State = StateStreamError
		st.rec.Error = fmt.Sprintf("stream cut short: the body ended without [DONE] or a finish_reason, after %d SSE events and %d tokens", st.n, st.counted)
		return
	}
	st.rec.EndAt = st.lastAt
	st.rec.State = StateOK
}

// fail ends the record in state with a formatted error. It and the
// fail* helpers keep formatting out of the read loop's stack frame.
func (st *streamRead) fail(state State, format string, args ...any) {
	st.rec.State = state
	st.rec.Error = fmt.Sprintf(format, args...)
}

// failRead ends the record on a read error before event st.n+1.
func (st *streamRead) failRead(err error) {
	st.fail(st.rs.fail(err, StateStreamError), "SSE event %d: %v", st.n+1, err)
}

func (st *streamRead) failEvent(what, msg string) {
	st.fail(StateStreamError, "SSE event %d: %s: %s", st.n, what, msg)
}

func (st *streamRead) failJSON(err error, data []byte) {
	st.fail(StateStreamError, "SSE event %d: invalid JSON: %v: %q", st.n, err, clip(data, 200))
}

// mediaTypeIs reports whether the Content-Type value ct has media type mt
// (RFC 9110 §8.3.1: case-insensitive, parameters after ';' ignored); a
// hand check where mime.ParseMediaType would build a parameter map per
// response.
func mediaTypeIs(ct, mt string) bool {
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	return strings.EqualFold(strings.TrimSpace(ct), mt)
}

// notEventStream records a 200 whose Content-Type ct is not
// text/event-stream (b: up to maxErrorBody bytes of its body) as a stream error.
func notEventStream(ct string, b []byte, rec *Record) {
	rec.State = StateStreamError
	rec.Error = fmt.Sprintf("HTTP 200 with Content-Type %q, not text/event-stream: %q", ct, clip(bytes.TrimSpace(b), 200))
}

// noteChoices keeps the chunk's finish reason in rec and returns how many
// generated tokens its choices carry (choice.tokens summed: a server that
// bundles tokens may list several choices for the one requested) and
// whether they were all reasoning text. 0 tokens: the chunk carries no text.
func noteChoices(ch *chunk, rec *Record) (tokens int, reasoning bool) {
	ans := false
	for i := range ch.Choices {
		cc := &ch.Choices[i]
		ans = ans || cc.answer()
		tokens += cc.tokens()
		if cc.FinishReason != "" {
			rec.FinishReason = string(cc.FinishReason)
		}
	}
	return tokens, !ans
}

// whole parses a non-streaming response body b, read by at (err: how its
// reading failed, if it did), into rec: one event at, carrying
// usage.completion_tokens tokens (else the choices' count).
func (st *streamRead) whole(b []byte, at time.Duration, err error) {
	rec := st.rec
	if err != nil {
		st.fail(st.rs.fail(err, StateStreamError), "reading body: %v", err)
		return
	}
	rec.FirstMessageAt = at
	ch := &st.ch
	st.memo.field = nil
	if err := decodeChunk(b, ch); err != nil {
		st.fail(StateStreamError, "invalid JSON body: %v: %q", err, clip(b, 200))
		return
	}
	if msg := ch.errorText(); msg != "" {
		st.fail(StateStreamError, "server error in body: %s", msg)
		return
	}
	if tokens, reasoning := noteChoices(ch, rec); tokens > 0 {
		if ch.Usage.Set && ch.Usage.CompletionTokens > 0 {
			tokens = ch.Usage.CompletionTokens
		}
		st.token(TokenEvent{At: at, Tokens: tokens, Reasoning: reasoning})
	}
	rec.EndAt = at
	rec.State = StateOK
	st.u = ch.Usage
}
