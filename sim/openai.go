package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// requestIDHeader is the header carrying the client's request id (the same
// name as loadgen.RequestIDHeader; duplicated so sim imports no transferlab package).
const requestIDHeader = "X-Request-Id"

// defaultMaxTokens is used when a request sets neither max_tokens nor
// max_completion_tokens: OpenAI's documented default for /v1/completions.
const defaultMaxTokens = 16

// tokenText is the text of every generated token (the sim has no vocabulary).
const tokenText = " tok"

// completionRequest holds the fields of /v1/completions and
// /v1/chat/completions bodies the sim reads; others (temperature, ...) are ignored.
type completionRequest struct {
	Model               string          `json:"model"`
	Prompt              json.RawMessage `json:"prompt"`
	Messages            []chatMessage   `json:"messages"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	IgnoreEOS bool `json:"ignore_eos"` // accepted; the sim always generates max_tokens
	N         *int `json:"n"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// apiError is an OpenAI-style error: {"error": {"message", "type", "param", "code"}}.
type apiError struct {
	status int
	Type   string `json:"type"`
	Param  string `json:"param,omitempty"`
	Msg    string `json:"message"`
	Code   string `json:"code,omitempty"`
}

func (e *apiError) Error() string { return e.Msg }

func badRequest(param, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, Type: "invalid_request_error", Param: param, Msg: fmt.Sprintf(format, args...)}
}

func writeError(w http.ResponseWriter, e *apiError) {
	body, _ := json.Marshal(struct {
		Error *apiError `json:"error"`
	}{e})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.status)
	_, _ = w.Write(append(body, '\n'))
}

// promptTokens counts a completions prompt: an array of token ids counts
// exactly (each id must be in [0, vocab)); a string counts one token per
// whitespace-separated word (strings.Fields), so "a b c" is 3 tokens.
func promptTokens(raw json.RawMessage, vocab int) (int, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return 0, badRequest("prompt", "prompt is required")
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, badRequest("prompt", "prompt: %v", err)
		}
		n := len(strings.Fields(s))
		if n == 0 {
			return 0, badRequest("prompt", "prompt is empty (a string prompt counts one token per whitespace-separated word)")
		}
		return n, nil
	case '[':
		var ids []int64
		if err := json.Unmarshal(raw, &ids); err != nil {
			return 0, badRequest("prompt", "prompt must be a string or one array of integer token ids (batched prompts are not supported): %v", err)
		}
		if len(ids) == 0 {
			return 0, badRequest("prompt", "prompt is an empty token array")
		}
		for i, id := range ids {
			if id < 0 || id >= int64(vocab) {
				return 0, badRequest("prompt", "prompt[%d]: token id %d out of range [0, %d)", i, id, vocab)
			}
		}
		return len(ids), nil
	}
	return 0, badRequest("prompt", "prompt must be a string or an array of token ids")
}

// chatTokens counts chat messages: the words (strings.Fields) of every
// message's content (a string, or an array of {"type":"text","text":...}
// parts); no chat template tokens are added.
func chatTokens(msgs []chatMessage) (int, *apiError) {
	if len(msgs) == 0 {
		return 0, badRequest("messages", "messages is required")
	}
	n := 0
	for i, m := range msgs {
		c := bytes.TrimSpace(m.Content)
		switch {
		case len(c) == 0 || bytes.Equal(c, []byte("null")):
		case c[0] == '"':
			var s string
			if err := json.Unmarshal(c, &s); err != nil {
				return 0, badRequest("messages", "messages[%d].content: %v", i, err)
			}
			n += len(strings.Fields(s))
		case c[0] == '[':
			var parts []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			if err := json.Unmarshal(c, &parts); err != nil {
				return 0, badRequest("messages", "messages[%d].content: %v", i, err)
			}
			for _, p := range parts {
				n += len(strings.Fields(p.Text))
			}
		default:
			return 0, badRequest("messages", "messages[%d].content must be a string or an array of parts", i)
		}
	}
	if n == 0 {
		return 0, badRequest("messages", "messages contain no text")
	}
	return n, nil
}

// parsedRequest is a validated completion request.
type parsedRequest struct {
	chat         bool
	inputTokens  int
	maxTokens    int
	stream       bool
	includeUsage bool
}

// parseRequest decodes and validates a body against cfg.
func parseRequest(body []byte, chat bool, cfg *Config) (parsedRequest, *apiError) {
	var req completionRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return parsedRequest{}, badRequest("", "invalid JSON body: %v", err)
	}
	p := parsedRequest{chat: chat, stream: req.Stream}
	if req.StreamOptions != nil {
		p.includeUsage = req.StreamOptions.IncludeUsage
	}
	if req.Model != "" && req.Model != cfg.Model.Name {
		return p, &apiError{status: http.StatusNotFound, Type: "invalid_request_error", Param: "model", Code: "model_not_found",
			Msg: fmt.Sprintf("the model %q does not exist; this server serves %q", req.Model, cfg.Model.Name)}
	}
	if req.N != nil && *req.N != 1 {
		return p, badRequest("n", "n must be 1, got %d", *req.N)
	}
	var err *apiError
	if chat {
		p.inputTokens, err = chatTokens(req.Messages)
	} else {
		p.inputTokens, err = promptTokens(req.Prompt, cfg.Model.VocabSize)
	}
	if err != nil {
		return p, err
	}
	p.maxTokens = defaultMaxTokens
	param := "max_tokens"
	switch {
	case req.MaxTokens != nil:
		p.maxTokens = *req.MaxTokens
	case req.MaxCompletionTokens != nil:
		p.maxTokens, param = *req.MaxCompletionTokens, "max_completion_tokens"
	}
	if p.maxTokens < 1 {
		return p, badRequest(param, "%s must be at least 1, got %d", param, p.maxTokens)
	}
	if total := p.inputTokens + p.maxTokens; total > cfg.Model.MaxModelLen {
		return p, badRequest(param, "this model's maximum context length is %d tokens; you requested %d tokens (%d in the prompt, %d for the completion)",
			cfg.Model.MaxModelLen, total, p.inputTokens, p.maxTokens)
	}
	if kv := cfg.Scheduler.KVCacheTokens; kv > 0 && p.inputTokens+p.maxTokens > kv {
		return p, badRequest(param, "prompt + completion (%d tokens) exceeds the KV-cache capacity (%d tokens)", p.inputTokens+p.maxTokens, kv)
	}
	return p, nil
}

// sseEvents are one request's pre-encoded SSE events, built once so that
// writing a token event allocates nothing.
type sseEvents struct {
	role  []byte // chat only: the role-only first chunk
	token []byte // a token event that is not the last
	last  []byte // the last token event (finish_reason "length")
	usage []byte // the usage-only chunk (choices empty)
	done  []byte // data: [DONE]
}

// newSSEEvents encodes the events of one streamed response.
func newSSEEvents(chat, includeUsage bool, id, model string, created int64, inputTokens, maxTokens int) *sseEvents {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	object := "text_completion"
	if chat {
		object = "chat.completion.chunk"
	}
	head := `data: {"id":` + q(id) + `,"object":"` + object + `","created":` + strconv.FormatInt(created, 10) + `,"model":` + q(model) + `,"choices":`
	tail := "}\n\n"
	if includeUsage {
		tail = `,"usage":null}` + "\n\n"
	}
	choice := func(finish string) string {
		f := "null"
		if finish != "" {
			f = q(finish)
		}
		if chat {
			return `[{"index":0,"delta":{"content":` + q(tokenText) + `},"logprobs":null,"finish_reason":` + f + `}]`
		}
		return `[{"index":0,"text":` + q(tokenText) + `,"logprobs":null,"finish_reason":` + f + `}]`
	}
	ev := &sseEvents{
		token: []byte(head + choice("") + tail),
		last:  []byte(head + choice("length") + tail),
		done:  []byte("data: [DONE]\n\n"),
	}
	if chat {
		ev.role = []byte(head + `[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]` + tail)
	}
	if includeUsage {
		ev.usage = []byte(head + `[],"usage":{"prompt_tokens":` + strconv.Itoa(inputTokens) +
			`,"completion_tokens":` + strconv.Itoa(maxTokens) + `,"total_tokens":` + strconv.Itoa(inputTokens+maxTokens) + "}}\n\n")
	}
	return ev
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// completionBody is a non-streaming response; C is the choice type of the endpoint.
type completionBody[C any] struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []C    `json:"choices"`
	Usage   usage  `json:"usage"`
}

type textChoice struct {
	Index        int     `json:"index"`
	Text         string  `json:"text"`
	Logprobs     *string `json:"logprobs"`
	FinishReason string  `json:"finish_reason"`
}

type chatChoice struct {
	Index   int `json:"index"`
	Message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"message"`
	Logprobs     *string `json:"logprobs"`
	FinishReason string  `json:"finish_reason"`
}

// completeBody encodes a non-streaming response: maxTokens tokens of text,
// finish_reason "length".
func completeBody(chat bool, id, model string, created int64, inputTokens, maxTokens int) []byte {
	text := strings.Repeat(tokenText, maxTokens)
	u := usage{inputTokens, maxTokens, inputTokens + maxTokens}
	var v any
	if chat {
		c := chatChoice{FinishReason: "length"}
		c.Message.Role, c.Message.Content = "assistant", text
		v = completionBody[chatChoice]{id, "chat.completion", created, model, []chatChoice{c}, u}
	} else {
		v = completionBody[textChoice]{id, "text_completion", created, model, []textChoice{{0, text, nil, "length"}}, u}
	}
	b, _ := json.Marshal(v) // plain structs of strings and ints: cannot fail
	return append(b, '\n')
}
