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
	"strconv"
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
	// maxEventsPrealloc bounds the Events capacity reserved up front.
	maxEventsPrealloc = 4096
)

// promptWords are one token each in common BPE vocabularies (GPT, Llama);
// a text prompt of n words is therefore about n tokens, and the server's
// usage.prompt_tokens is checked against it (Record.PromptMismatch).
var promptWords = [...]string{" the", " of", " and", " to", " in"}

// client sends one request and fills its Record.
type client struct {
	cfg   *config
	http  *http.Client
	url   string
	since func() time.Duration
}

func newClient(cfg *config, baseURL string, since func() time.Duration) *client {
	path := "/v1/completions"
	if cfg.endpoint == EndpointChat {
		path = "/v1/chat/completions"
	}
	hc := cfg.client
	if hc == nil {
		hc = NewHTTPClient()
	}
	return &client{cfg: cfg, http: hc, url: baseURL + path, since: since}
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

// failState maps a transport error to a final state: cancelled when the run
// ended, timeout when the request's own deadline passed, else fallback.
func failState(runCtx, reqCtx context.Context, fallback State) State {
	if runCtx.Err() != nil {
		return StateCancelled
	}
	if errors.Is(reqCtx.Err(), context.DeadlineExceeded) {
		return StateTimeout
	}
	return fallback
}

// do sends req and fills rec (SentAt onwards). It never returns an error: a
// failed request is data, kept in rec.State and rec.Error.
func (c *client) do(runCtx context.Context, req *traces.Request, rec *Record) {
	rctx, cancel := context.WithTimeout(runCtx, c.cfg.timeout)
	defer cancel()
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
		rec.State, rec.Error = failState(runCtx, rctx, StateHTTPError), err.Error()
		return
	}
	defer resp.Body.Close()
	rec.HTTPStatus = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		rec.State = StateHTTPError
		rec.Error = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, errorMessage(bytes.TrimSpace(b)))
		return
	}
	if cap(rec.Events) == 0 {
		rec.Events = make([]TokenEvent, 0, min(req.OutputTokens, maxEventsPrealloc)+1)
	}
	var u usageField
	if c.cfg.stream {
		u = c.readStream(runCtx, rctx, resp, rec)
	} else {
		u = c.readBody(runCtx, rctx, resp, rec)
	}
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
func (c *client) readStream(runCtx, rctx context.Context, resp *http.Response, rec *Record) usageField {
	var u usageField
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		rec.State = StateStreamError
		rec.Error = fmt.Sprintf("HTTP 200 with Content-Type %q, not text/event-stream: %q", resp.Header.Get("Content-Type"), clip(bytes.TrimSpace(b), 200))
		return u
	}
	sr := newSSEReader(resp.Body, c.since, make([]byte, sseBufSize))
	var ch chunk
	var lastAt time.Duration
	ended := false // finish_reason or usage seen: a stream without [DONE] may end there
	for n := 1; ; n++ {
		ev, err := sr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			rec.State = failState(runCtx, rctx, StateStreamError)
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
			_, _ = io.CopyN(io.Discard, resp.Body, maxDrain)
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
		c.addChoices(&ch, ev.At, rec, 1)
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
func (c *client) addChoices(ch *chunk, at time.Duration, rec *Record, tokens int) {
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
		rec.Events = append(rec.Events, TokenEvent{At: at, Tokens: tokens, Reasoning: !ans})
	}
}

// readBody parses a non-streaming response into rec: one event at the time
// the whole body was read, carrying usage.completion_tokens tokens.
func (c *client) readBody(runCtx, rctx context.Context, resp *http.Response, rec *Record) usageField {
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	at := c.since()
	if err != nil {
		rec.State = failState(runCtx, rctx, StateStreamError)
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
	c.addChoices(&ch, at, rec, tokens)
	rec.EndAt = at
	rec.State = StateOK
	return ch.Usage
}
