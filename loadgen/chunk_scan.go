package loadgen

import (
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// The fast path decodes a chunk by walking its JSON once, keeping only the
// fields chunk needs, allocating nothing; encoding/json with the same
// struct costs ~10× more per event (BenchmarkSSEParse). On any input it does
// not understand, decodeChunk falls back to encoding/json, whose result and
// error message are authoritative; TestDecodeChunkAgreesWithEncodingJSON and
// FuzzDecodeChunk check the two agree.

// errScan reports input the fast path does not handle.
var errScan = errors.New("fast chunk scan: unsupported input")

// decodeChunk fills c (reset first) from one JSON payload.
func decodeChunk(data []byte, c *chunk) error {
	c.reset()
	s := scanner{b: data}
	if err := s.chunk(c); err == nil {
		return nil
	}
	c.reset()
	return json.Unmarshal(data, c)
}

// scanner is a minimal JSON walker over b.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte (0 at end).
func (s *scanner) peek() byte {
	s.ws()
	if s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

func (s *scanner) expect(c byte) error {
	if s.peek() != c {
		return errScan
	}
	s.i++
	return nil
}

// str reads a string and returns its raw (still escaped) contents.
func (s *scanner) str() ([]byte, error) {
	if s.peek() != '"' {
		return nil, errScan
	}
	s.i++
	start := s.i
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '\\':
			s.i += 2
		case c == '"':
			raw := s.b[start:s.i]
			s.i++
			return raw, nil
		case c < 0x20:
			return nil, errScan
		default:
			s.i++
		}
	}
	return nil, errScan
}

// null consumes a null literal if present.
func (s *scanner) null() bool {
	if s.peek() == 'n' && len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// textLen reads a string or null as a textLen (raw length).
func (s *scanner) textLen() (textLen, error) {
	if s.null() {
		return 0, nil
	}
	raw, err := s.str()
	if err != nil {
		return 0, err
	}
	return textLen(len(raw)), nil
}

// int reads a non-negative JSON integer (or null as 0).
func (s *scanner) int() (int, error) {
	if s.null() {
		return 0, nil
	}
	s.ws()
	n, start := 0, s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		n = n*10 + int(s.b[s.i]-'0')
		s.i++
	}
	if s.i == start || s.i-start > 15 {
		return 0, errScan
	}
	if s.i < len(s.b) && (s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		return 0, errScan
	}
	return n, nil
}

// skip consumes any JSON value.
func (s *scanner) skip() error {
	switch c := s.peek(); c {
	case '"':
		_, err := s.str()
		return err
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '{', '[':
				depth++
				s.i++
			case '}', ']':
				depth--
				s.i++
				if depth == 0 {
					return nil
				}
			case '"':
				if _, err := s.str(); err != nil {
					return err
				}
			default:
				s.i++
			}
		}
		return errScan
	case 0:
		return errScan
	default:
		start := s.i
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				if s.i == start {
					return errScan
				}
				return s.literal(s.b[start:s.i])
			}
			s.i++
		}
		return s.literal(s.b[start:s.i])
	}
}

// literal accepts true, false, null and numbers (loosely).
func (s *scanner) literal(b []byte) error {
	switch string(b) {
	case "true", "false", "null":
		return nil
	}
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E') {
			return errScan
		}
	}
	return nil
}

// object walks an object, calling field for each key; field must consume the value.
func (s *scanner) object(field func(key []byte) error) error {
	if s.null() {
		return nil
	}
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		key, err := s.str()
		if err != nil {
			return err
		}
		for _, c := range key {
			// encoding/json matches keys case-insensitively (with Unicode
			// folding) and unescapes them: leave such keys to it.
			if c >= 'A' && c <= 'Z' || c >= 0x80 || c == '\\' {
				return errScan
			}
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		if err := field(key); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return errScan
		}
	}
}

func (s *scanner) chunk(c *chunk) error {
	err := s.object(func(key []byte) error {
		switch string(key) {
		case "choices":
			return s.choices(c)
		case "usage":
			return s.usage(&c.Usage)
		case "error":
			start := s.peekStart()
			if err := s.skip(); err != nil {
				return err
			}
			c.Error = s.b[start:s.i]
			return nil
		case "object":
			if s.null() {
				return nil
			}
			raw, err := s.str()
			c.Object = textObject(string(raw) == "error")
			return err
		case "message":
			start := s.peekStart()
			if err := s.skip(); err != nil {
				return err
			}
			c.Message = s.b[start:s.i]
			return nil
		}
		return s.skip()
	})
	if err != nil {
		return err
	}
	if s.peek() != 0 {
		return errScan // trailing data
	}
	return nil
}

func (s *scanner) peekStart() int {
	s.ws()
	return s.i
}

func (s *scanner) choices(c *chunk) error {
	if s.null() {
		return nil
	}
	c.Choices = c.Choices[:0] // a repeated key replaces the array, as in encoding/json
	if err := s.expect('['); err != nil {
		return err
	}
	if s.peek() == ']' {
		s.i++
		return nil
	}
	for {
		c.Choices = append(c.Choices, choice{})
		ch := &c.Choices[len(c.Choices)-1]
		if err := s.object(func(key []byte) error { return s.choiceField(ch, key) }); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return errScan
		}
	}
}

func (s *scanner) choiceField(ch *choice, key []byte) error {
	var err error
	switch string(key) {
	case "text":
		ch.Text, err = s.textLen()
	case "delta":
		err = s.parts(&ch.Delta)
	case "message":
		err = s.parts(&ch.Message)
	case "finish_reason":
		if s.null() {
			ch.FinishReason = ""
			return nil
		}
		var raw []byte
		raw, err = s.str()
		for _, b := range raw {
			if b == '\\' {
				return errScan // escaped finish reasons: let encoding/json unescape
			}
		}
		if !utf8.Valid(raw) {
			return errScan // encoding/json replaces invalid UTF-8 with U+FFFD
		}
		ch.FinishReason = finishReason(raw)
	case "token_ids":
		ch.TokenIDs, err = s.count()
	default:
		err = s.skip()
	}
	return err
}

// count reads an array and returns its length; null or any other value is 0.
func (s *scanner) count() (tokenCount, error) {
	if s.peek() != '[' {
		return 0, s.skip()
	}
	s.i++
	if s.peek() == ']' {
		s.i++
		return 0, nil
	}
	for n := tokenCount(1); ; n++ {
		if err := s.skip(); err != nil {
			return 0, err
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return n, nil
		default:
			return 0, errScan
		}
	}
}

func (s *scanner) parts(p *textParts) error {
	return s.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "content":
			p.Content, err = s.textLen()
		case "reasoning_content":
			p.ReasoningContent, err = s.textLen()
		case "reasoning":
			p.Reasoning, err = s.textLen()
		default:
			err = s.skip()
		}
		return err
	})
}

func (s *scanner) usage(u *usageField) error {
	if s.null() {
		return nil
	}
	var v usageField
	err := s.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "prompt_tokens":
			v.PromptTokens, err = s.int()
		case "completion_tokens":
			v.CompletionTokens, err = s.int()
		default:
			err = s.skip()
		}
		return err
	})
	if err != nil {
		return err
	}
	v.Set = true
	*u = v
	return nil
}
