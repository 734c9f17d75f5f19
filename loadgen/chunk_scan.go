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
	return decodeChunkJSON(data, c)
}

// decodeChunkJSON fills c (reset first) with encoding/json: the authority
// where the fast scanner gives up.
func decodeChunkJSON(data []byte, c *chunk) error {
	c.reset()
	return json.Unmarshal(data, c)
}

// scanner is a minimal JSON walker over b. Offsets it returns (value
// starts and ends) are the payload's: b is the whole payload, or, for a
// payload decoded as it arrives (chunkStream), the piece of it that starts
// at base, and pull moves b on to the bytes that follow (false: the
// payload ended), src holding every piece for spans that cross pieces.
type scanner struct {
	b    []byte
	i    int
	base int
	pull func() bool
	src  *pieceStore
	// broken is set when a streamed literal turned out not to be null
	// after bytes of it were consumed: the scan then fails (errScan).
	broken bool
	// texts counts the text values (textParts' and "text": strings or
	// null) the scan assigned; textField is where the last one went,
	// when a string, and textFrom, textTo its raw bytes' payload offsets
	// (chunkMemo).
	texts            int
	lists            int // "choices" keys seen
	textField        *textLen
	textFrom, textTo int
}

// avail reports whether a byte is at s.i, pulling more of a streamed
// payload when b is used up; false at the payload's end.
func (s *scanner) avail() bool {
	if s.i < len(s.b) {
		return true
	}
	return s.more()
}

func (s *scanner) more() bool {
	for s.i >= len(s.b) {
		if s.pull == nil || s.broken || !s.pull() {
			return false
		}
	}
	return true
}

// pos is the payload offset of s.i.
func (s *scanner) pos() int { return s.base + s.i }

// span returns the payload's bytes [from, to), to ≤ pos; it copies only
// when they cross pieces of a streamed payload.
func (s *scanner) span(from, to int) []byte {
	if from >= s.base {
		return s.b[from-s.base : to-s.base]
	}
	return s.src.span(from, to)
}

// ws skips white space: after it, a byte is at s.i unless the payload
// ended. Compact JSON (no space at s.i) takes the inlined test alone.
func (s *scanner) ws() {
	if s.i < len(s.b) && s.b[s.i] > ' ' {
		return
	}
	s.wsSlow()
}

func (s *scanner) wsSlow() {
	for {
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ' ', '\t', '\n', '\r':
				s.i++
			default:
				return
			}
		}
		if !s.more() {
			return
		}
	}
}

// peek returns the next non-space byte (0 at end).
func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) expect(c byte) error {
	if s.peek() != c {
		return errScan
	}
	s.i++
	return nil
}

// str reads a string: the payload offsets [from, to) of its raw (still
// escaped) contents, and whether they hold an escape, an ASCII capital or
// a non-ASCII byte (fancy: a key with any is left to encoding/json).
func (s *scanner) str() (from, to int, fancy bool, err error) {
	if s.peek() != '"' {
		return 0, 0, false, errScan
	}
	s.i++
	from = s.pos()
	for {
		b, i := s.b, s.i
		for i < len(b) && strBytes[b[i]] == strPlain {
			i++
		}
		s.i = i
		if !s.avail() {
			return 0, 0, false, errScan
		}
		switch strBytes[s.b[s.i]] {
		case strPlain: // the first byte of a piece just pulled
		case strFancy:
			fancy = true
			s.i++
		case strEscape:
			fancy = true
			s.i += 2
		case strQuote:
			to = s.pos()
			s.i++
			return from, to, fancy, nil
		default:
			return 0, 0, false, errScan
		}
	}
}

// The classes of a string's bytes for str.
const (
	strPlain   = iota
	strFancy   // an ASCII capital or a non-ASCII byte
	strEscape  // '\\'
	strQuote   // '"'
	strControl // < 0x20: not allowed raw
)

// strBytes is each byte's class (read-only).
var strBytes = func() (t [256]uint8) {
	for c := range t {
		switch {
		case c < 0x20:
			t[c] = strControl
		case c == '"':
			t[c] = strQuote
		case c == '\\':
			t[c] = strEscape
		case c >= 0x80 || c >= 'A' && c <= 'Z':
			t[c] = strFancy
		}
	}
	return t
}()

// strRaw reads a string and returns its raw (still escaped) contents.
func (s *scanner) strRaw() ([]byte, error) {
	from, to, _, err := s.str()
	if err != nil {
		return nil, err
	}
	return s.span(from, to), nil
}

// null consumes a null literal if present.
func (s *scanner) null() bool {
	if s.peek() != 'n' {
		return false
	}
	return s.nullRest()
}

// nullRest is null past the peek of its 'n'.
func (s *scanner) nullRest() bool {
	if len(s.b)-s.i >= 4 {
		if string(s.b[s.i:s.i+4]) == "null" {
			s.i += 4
			return true
		}
		return false
	}
	// Near the end of a piece: consume it byte by byte. No caller accepts
	// a value starting with 'n' other than null, so a mismatch fails the scan.
	for k := 0; k < 4; k++ {
		if !s.avail() || s.b[s.i] != "null"[k] {
			s.broken = true
			return false
		}
		s.i++
	}
	return true
}

// text reads a string or null into dst as a textLen (raw length),
// noting where it went (scanner.texts, textField).
func (s *scanner) text(dst *textLen) error {
	s.texts++
	s.textField = nil
	if s.null() {
		*dst = 0
		return nil
	}
	from, to, _, err := s.str()
	if err != nil {
		return err
	}
	*dst = textLen(to - from)
	s.textField, s.textFrom, s.textTo = dst, from, to
	return nil
}

// int reads a non-negative JSON integer (or null as 0).
func (s *scanner) int() (int, error) {
	if s.null() {
		return 0, nil
	}
	s.ws()
	n, digits := 0, 0
	for s.avail() && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		n = n*10 + int(s.b[s.i]-'0')
		s.i++
		digits++
	}
	if digits == 0 || digits > 15 {
		return 0, errScan
	}
	if s.avail() && (s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		return 0, errScan
	}
	return n, nil
}

// skip consumes any JSON value.
func (s *scanner) skip() error {
	switch c := s.peek(); c {
	case '"':
		_, _, _, err := s.str()
		return err
	case '{', '[':
		depth := 0
		for s.avail() {
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
				if _, _, _, err := s.str(); err != nil {
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
		start, num := s.pos(), true
		for s.avail() {
			switch c := s.b[s.i]; c {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				if s.pos() == start {
					return errScan
				}
				return s.literal(start, num)
			default:
				num = num && numByte(c)
			}
			s.i++
		}
		return s.literal(start, num)
	}
}

// literal accepts the bytes from start to s.i if they are true, false,
// null or a number (loosely: num, every byte one of a number's).
func (s *scanner) literal(start int, num bool) error {
	if num {
		return nil
	}
	if s.pos()-start <= len("false") {
		switch string(s.span(start, s.pos())) {
		case "true", "false", "null":
			return nil
		}
	}
	return errScan
}

// numByte reports whether c may appear in a JSON number.
func numByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
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
		from, to, fancy, err := s.str()
		if err != nil {
			return err
		}
		if fancy {
			// encoding/json matches keys case-insensitively (with Unicode
			// folding) and unescapes them: leave such keys to it.
			return errScan
		}
		var key []byte // a key longer than any field's is no field's
		if to-from <= maxKey {
			key = s.span(from, to)
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

// maxKey is longer than every key the scanner looks for (bytes).
const maxKey = 32

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
			c.Error = s.span(start, s.pos())
			return nil
		case "object":
			if s.null() {
				return nil
			}
			from, to, _, err := s.str()
			c.Object = textObject(err == nil && to-from == len("error") && string(s.span(from, to)) == "error")
			return err
		case "message":
			start := s.peekStart()
			if err := s.skip(); err != nil {
				return err
			}
			c.Message = s.span(start, s.pos())
			return nil
		}
		return s.skip()
	})
	if err != nil {
		return err
	}
	if s.peek() != 0 || s.broken {
		return errScan // trailing data
	}
	return nil
}

// peekStart is the payload offset of the next non-space byte.
func (s *scanner) peekStart() int {
	s.ws()
	return s.pos()
}

func (s *scanner) choices(c *chunk) error {
	s.lists++
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
		err = s.text(&ch.Text)
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
		raw, err = s.strRaw()
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
			err = s.text(&p.Content)
		case "reasoning_content":
			err = s.text(&p.ReasoningContent)
		case "reasoning":
			err = s.text(&p.Reasoning)
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
