package loadgen

import (
	"bytes"
	"encoding/json"
)

// textLen decodes a JSON string (or null) keeping only its encoded length, so
// per-event decoding allocates nothing for the text. It is > 0 exactly when
// the string is non-empty (the raw form "" has length 2).
type textLen int

// UnmarshalJSON implements json.Unmarshaler.
func (t *textLen) UnmarshalJSON(b []byte) error {
	if len(b) >= 2 && b[0] == '"' {
		*t = textLen(len(b) - 2)
		return nil
	}
	*t = 0 // null, or a non-string the dialects never send for text
	return nil
}

// usageField is an OpenAI usage object; Set is false when absent or null.
type usageField struct {
	Set              bool
	PromptTokens     int
	CompletionTokens int
}

// UnmarshalJSON implements json.Unmarshaler.
func (u *usageField) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	var v struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*u = usageField{Set: true, PromptTokens: v.PromptTokens, CompletionTokens: v.CompletionTokens}
	return nil
}

// finishReason keeps the finish_reason string; it allocates only on the one
// event that carries it.
type finishReason string

// UnmarshalJSON implements json.Unmarshaler.
func (f *finishReason) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		*f = ""
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*f = finishReason(s)
	return nil
}

// textParts are the text fields a chunk's choice may carry, across dialects:
// completions "text"; chat "delta"/"message" with "content", and reasoning as
// "reasoning_content" (vLLM, SGLang, DeepSeek) or "reasoning" (Ollama, vLLM ≥ 0.10).
type textParts struct {
	Content          textLen `json:"content"`
	ReasoningContent textLen `json:"reasoning_content"`
	Reasoning        textLen `json:"reasoning"`
}

// choice is one element of "choices" in a completion or chat chunk.
type choice struct {
	Text         textLen      `json:"text"`
	Delta        textParts    `json:"delta"`
	Message      textParts    `json:"message"`
	FinishReason finishReason `json:"finish_reason"`
	// TokenIDs counts the generated token ids the choice carries (vLLM's
	// "token_ids" with return_token_ids); 0 when absent.
	TokenIDs tokenCount `json:"token_ids"`
}

// tokenCount decodes a JSON array keeping only its length; null or a
// non-array is 0.
type tokenCount int

// UnmarshalJSON implements json.Unmarshaler.
func (t *tokenCount) UnmarshalJSON(b []byte) error {
	*t = 0
	if len(b) == 0 || b[0] != '[' {
		return nil
	}
	var v []json.RawMessage
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*t = tokenCount(len(v))
	return nil
}

// tokens is how many generated tokens the choice carries: its token ids
// when it lists them, else 1 when it carries any text, else 0.
func (c *choice) tokens() int {
	if !c.answer() && !c.reasoning() {
		return 0
	}
	return max(1, int(c.TokenIDs))
}

// answer reports whether the choice carries answer text.
func (c *choice) answer() bool {
	return c.Text > 0 || c.Delta.Content > 0 || c.Message.Content > 0
}

// reasoning reports whether the choice carries reasoning text.
func (c *choice) reasoning() bool {
	return c.Delta.ReasoningContent > 0 || c.Delta.Reasoning > 0 || c.Message.ReasoningContent > 0 || c.Message.Reasoning > 0
}

// chunk is one decoded response body or SSE data payload. It is reused across
// events; reset clears it while keeping the choices' backing array.
type chunk struct {
	Choices []choice   `json:"choices"`
	Usage   usageField `json:"usage"`
	// Error is set by TGI ({"error": "...", "error_type": ...}), llama.cpp and
	// OpenAI ({"error": {...}}).
	Error json.RawMessage `json:"error"`
	// Object is "error" in vLLM's mid-stream error payloads.
	Object textObject `json:"object"`
	// Message is vLLM's error message (with Object "error").
	Message json.RawMessage `json:"message"`
}

// textObject keeps only whether "object" was "error".
type textObject bool

// UnmarshalJSON implements json.Unmarshaler.
func (o *textObject) UnmarshalJSON(b []byte) error {
	*o = textObject(bytes.Equal(b, []byte(`"error"`)))
	return nil
}

func (c *chunk) reset() {
	ch := c.Choices[:cap(c.Choices)]
	clear(ch)
	*c = chunk{Choices: ch[:0]}
}

// errorText returns the server's error message carried by the chunk, or "".
func (c *chunk) errorText() string {
	if len(c.Error) > 0 && !bytes.Equal(c.Error, []byte("null")) {
		return errorMessage(c.Error)
	}
	if c.Object {
		if len(c.Message) > 0 {
			return errorMessage(c.Message)
		}
		return "error object without message"
	}
	return ""
}

// errorMessage extracts a human message from a JSON error value: a string, an
// object with "message", or the raw JSON clipped.
func errorMessage(raw []byte) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		Message string `json:"message"`
		Error   any    `json:"error"`
	}
	if json.Unmarshal(raw, &o) == nil {
		if o.Message != "" {
			return o.Message
		}
		if es, ok := o.Error.(string); ok && es != "" {
			return es
		}
		if em, ok := o.Error.(map[string]any); ok {
			if m, ok := em["message"].(string); ok {
				return m
			}
		}
	}
	return string(clip(raw, 200))
}
