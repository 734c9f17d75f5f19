package loadgen

import "bytes"

// chunkMemo decodes a stream's successive data payloads, most of which
// differ from the one before only inside their one text value (a server
// writes the same id, object, created, model and choice fields around each
// token's text): a payload that is the previous one with only that value's
// raw bytes replaced, by bytes that cannot end or escape a JSON string,
// decodes to the previous chunk with that value's length changed, so the
// memo sets the length and skips the scan. Anything else is decoded in
// full (decodeChunk). Exact, not a heuristic: TestChunkMemoAgreesWithDecode
// and FuzzChunkMemo check it against decodeChunk.
type chunkMemo struct {
	// prev is the last payload decoded (a copy); field is nil when it
	// cannot be replayed.
	prev []byte
	// from, to are its text value's raw bytes (payload offsets) and field
	// where that value's length went in the chunk.
	from, to int
	field    *textLen
}

// maxMemoPayload bounds the payload a chunkMemo keeps (bytes): a token
// event is ~200 B; a longer payload is decoded in full each time.
const maxMemoPayload = 512

// decode fills c from data as decodeChunk does. c must be the chunk of the
// memo's previous decode, untouched since (streamRead.ch).
func (m *chunkMemo) decode(data []byte, c *chunk) error {
	if m.field != nil {
		if to, ok := m.replay(data); ok {
			*m.field = textLen(to - m.from)
			m.keep(data, to)
			return nil
		}
		m.field = nil
	}
	c.reset()
	s := scanner{b: data}
	if err := s.chunk(c); err != nil {
		return decodeChunkJSON(data, c)
	}
	if s.texts == 1 && s.lists == 1 && s.textField != nil && len(data) <= maxMemoPayload &&
		c.Error == nil && c.Message == nil && len(c.Choices) == 1 && c.Choices[0].holds(s.textField) {
		m.field, m.from = s.textField, s.textFrom
		m.keep(data, s.textTo)
	}
	return nil
}

// keep copies data as the payload to compare the next with, its text
// value ending at to.
func (m *chunkMemo) keep(data []byte, to int) {
	m.prev = append(m.prev[:0], data...)
	m.to = to
}

// replay reports whether data is the previous payload with only its text
// value's raw bytes replaced by bytes allowed raw inside a JSON string,
// and where the new value ends (payload offset).
func (m *chunkMemo) replay(data []byte) (to int, ok bool) {
	tail := m.prev[m.to:]
	to = len(data) - len(tail)
	if to < m.from || !bytes.Equal(data[to:], tail) || !bytes.Equal(data[:m.from], m.prev[:m.from]) {
		return 0, false
	}
	for _, b := range data[m.from:to] {
		switch strBytes[b] {
		case strQuote, strEscape, strControl:
			return 0, false
		}
	}
	return to, true
}

// holds reports whether f is one of the choice's text lengths.
func (c *choice) holds(f *textLen) bool {
	return f == &c.Text || c.Delta.holds(f) || c.Message.holds(f)
}

func (p *textParts) holds(f *textLen) bool {
	return f == &p.Content || f == &p.ReasoningContent || f == &p.Reasoning
}
