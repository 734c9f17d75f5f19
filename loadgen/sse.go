package loadgen

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"
)

// maxSSELine bounds one SSE line (bytes); a longer line is a stream error, not
// unbounded memory. Comment lines are not kept (sseReader.inComment), so
// this bounds the other lines.
const maxSSELine = 8 << 20

// longDataMin is the length (bytes) from which a data line still
// arriving is decoded as it arrives (chunk_stream.go) instead of kept and
// decoded after its last byte.
const longDataMin = 16 << 10

// sseEvent is one dispatched Server-Sent Event. Data and Name alias the
// reader's buffers and are valid until the next call to next.
type sseEvent struct {
	Name []byte
	// Data is the event's data, unless long holds it.
	Data []byte
	// At is when the read that delivered the event's last byte returned, as
	// an offset from the run start (monotonic).
	At time.Duration
	// long, when not nil, is the event's data instead of Data: one long
	// data line, already decoded as a chunk while it arrived.
	long *chunkStream
}

// payload returns the event's data in one slice (for a long data line, a
// copy of it: only the rare paths that need the bytes ask).
func (e *sseEvent) payload() []byte {
	if e.long != nil {
		return e.long.bytes()
	}
	return e.Data
}

// sseReader parses the SSE wire format (WHATWG HTML "Server-sent events",
// §9.2.6 "Interpreting an event stream"): lines end in LF, CRLF or CR; a line
// starting with ':' is a comment (keep-alive); "field:value" with one optional
// space after the colon; data lines of one event are joined with LF; a blank
// line dispatches the event. Unlike the spec it also dispatches a last event
// whose lines were complete but whose blank line never came before EOF, as
// some servers end that way.
//
// Each event is stamped with the time of the read that completed it (when
// the read returned here; the reactor feeds its push reader the kernel's
// receive time instead): bytes of several events arriving in one read share
// that time, and an event split across reads gets the time of its last part
// (DESIGN.md "Metric definitions").
type sseReader struct {
	r     io.Reader
	since func() time.Duration
	buf   []byte
	lo    int // unparsed data is buf[lo:hi]
	hi    int
	// seen is how many bytes of buf[lo:hi] line has already searched for a
	// line end without finding one, so each byte is searched once: a long
	// line arriving in many reads costs time linear in its length.
	seen int
	// scanned counts the bytes line has searched for a line end (tests
	// check that it stays linear in the bytes read).
	scanned int64
	at      time.Duration // time of the last read that returned data
	err     error         // sticky read error

	skipLF bool // the previous line ended in CR: a leading LF belongs to it
	// inComment is true while the bytes of an unfinished comment line are
	// being dropped as they arrive (nothing reads a comment's text), so a
	// long comment line costs neither memory nor copying: the buffer stays
	// the size of a read, whatever the line's length. comment is true when
	// the line last returned by line is such a comment's end.
	inComment bool
	comment   bool
	hasData   bool
	data      []byte
	name      []byte
	// Comments counts comment (keep-alive) lines seen.
	Comments int

	// long decodes a long data line as it arrives (chunk_stream.go; nil
	// until a stream's first). longOn: the unfinished line is going into
	// long, its bytes dropped from buf as they arrive (as a comment's);
	// longEnd: the line just returned by line is that line's end; longPend:
	// the event being built has it as its data. longPre is the line's
	// length before its value ("data:" or "data: ").
	long                      *chunkStream
	longOn, longEnd, longPend bool
	longPre                   int
	// longMin is the length from which a data line is decoded as it
	// arrives (0: longDataMin), longPiece the decoder's piece size (0:
	// pieceSize); tests set less.
	longMin, longPiece int
	// work counts the bytes the reader copied or decoded, its reads' own
	// included (tests check that each read's share stays proportional to
	// the read: no step walks a whole long line).
	work int64
}

// newSSEReader reads from r, stamping with since (offset from run start).
func newSSEReader(r io.Reader, since func() time.Duration, buf []byte) *sseReader {
	if cap(buf) < 16 {
		buf = make([]byte, 4096)
	}
	return &sseReader{r: r, since: since, buf: buf[:cap(buf)]}
}

// errSSELineTooLong is returned for a line longer than maxSSELine.
var errSSELineTooLong = fmt.Errorf("SSE line longer than %d bytes", maxSSELine)

// errSSETruncated is returned when the stream ends inside an incomplete line.
var errSSETruncated = errors.New("stream ended inside an SSE line")

// next returns the next event. At a clean end of stream it returns io.EOF;
// a read error is returned as is, after the complete events before it.
func (s *sseReader) next() (sseEvent, error) {
	for {
		if ev, ok := s.parse(); ok {
			return ev, nil
		}
		if s.err != nil {
			return s.end()
		}
		if err := s.fill(); err != nil {
			return sseEvent{}, err
		}
	}
}

// feed appends p, read at at, to the unparsed bytes: the push side of the
// reader (the reactor client, which has no io.Reader), after which parse
// returns the events p completed. It fails only for a line longer than
// maxSSELine.
func (s *sseReader) feed(p []byte, at time.Duration) error {
	if s.longOn && s.longLen()+len(p) > maxSSELine {
		return errSSELineTooLong
	}
	if s.lo > 0 {
		n := copy(s.buf, s.buf[s.lo:s.hi])
		s.work += int64(n)
		s.lo, s.hi = 0, n
	}
	if need := s.hi + len(p); need > len(s.buf) {
		if need > maxSSELine {
			return errSSELineTooLong
		}
		nb := make([]byte, max(need, 2*len(s.buf), 64))
		s.work += int64(copy(nb, s.buf[:s.hi]))
		s.buf = nb
	}
	n := copy(s.buf[s.hi:], p)
	s.hi += n
	s.work += int64(n)
	s.at = at
	return nil
}

// longLen is the length of the long data line going into s.long so far.
func (s *sseReader) longLen() int { return s.longPre + s.long.n() + s.hi - s.lo }

// end is next once the reading stopped with s.err: the lenient last
// event, the truncated-line error, or s.err itself (io.EOF at a clean end).
func (s *sseReader) end() (sseEvent, error) {
	if s.err == io.EOF && s.hasData {
		// Lenient: dispatch a complete last event with no blank line.
		return s.dispatch(), nil
	}
	if s.err == io.EOF && (s.hi > s.lo || s.inComment || s.longOn) {
		return sseEvent{}, s.truncated()
	}
	return sseEvent{}, s.err
}

// parse consumes the complete lines buffered and returns the first event
// they dispatch; false when they dispatch none (more bytes are needed).
func (s *sseReader) parse() (sseEvent, bool) {
	for {
		line, ok := s.line()
		if !ok {
			return sseEvent{}, false
		}
		if s.comment { // the end of a comment line whose start was dropped
			s.Comments++
			continue
		}
		if s.longEnd { // the end of a long data line, decoded as it came
			s.longEnd = false
			s.hasData, s.longPend = true, true
			continue
		}
		if len(line) == 0 {
			if s.hasData {
				return s.dispatch(), true
			}
			s.name = s.name[:0]
			continue
		}
		if line[0] == ':' {
			s.Comments++
			continue
		}
		field, value := line, line[:0]
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "data":
			if s.longPend {
				// A second data line after a long one: the event's data is
				// both, joined, and decoded whole after its end.
				s.data = append(s.data[:0], s.long.bytes()...)
				s.work += int64(len(s.data))
				s.longPend = false
			}
			if s.hasData {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, value...)
			s.hasData = true
		case "event":
			s.name = append(s.name[:0], value...)
		}
		s.work += int64(len(value))
		// "id", "retry" and unknown fields are ignored, as the spec says.
	}
}

// truncated is the error for a stream that ended inside a line.
func (s *sseReader) truncated() error {
	if s.inComment {
		return fmt.Errorf("%w (a comment line)", errSSETruncated)
	}
	if s.longOn {
		head := append([]byte("data: ")[:s.longPre], s.long.store.span(0, min(80, s.long.n()))...)
		return fmt.Errorf("%w (%d bytes: %q)", errSSETruncated, s.longLen(), clip(head, 80))
	}
	return fmt.Errorf("%w (%d bytes: %q)", errSSETruncated, s.hi-s.lo, clip(s.buf[s.lo:s.hi], 80))
}

func (s *sseReader) dispatch() sseEvent {
	ev := sseEvent{Name: s.name, Data: s.data, At: s.at}
	if s.longPend {
		ev.Data, ev.long = nil, s.long
		s.longPend = false
	}
	s.hasData = false
	s.data = s.data[:0]
	s.name = s.name[:0]
	return ev
}

// line returns the next complete line without its terminator. It searches
// only bytes it has not searched before (s.seen), so a line that arrives in
// many reads is searched once in all, not once per read.
func (s *sseReader) line() ([]byte, bool) {
	if s.skipLF && s.lo < s.hi {
		if s.buf[s.lo] == '\n' {
			s.lo++
		}
		s.skipLF = false
	}
	b := s.buf[s.lo:s.hi]
	rest := b[s.seen:]
	s.scanned += int64(len(rest))
	i := bytes.IndexByte(rest, '\n')
	if i < 0 {
		i = len(rest)
	}
	if j := bytes.IndexByte(rest[:i], '\r'); j >= 0 {
		i = j
	}
	if i == len(rest) {
		if s.longOn {
			// More of a long data line (b starts mid-line): decode it, and
			// drop it from buf (the decoder keeps it).
			s.work += int64(len(b) + s.long.push(b, false)) // kept, and walked
			s.hi, s.seen = s.lo, 0
			return nil, false
		}
		if s.inComment || (len(b) > 0 && b[0] == ':') {
			// An unfinished comment line: drop what came of it.
			s.inComment = true
			s.hi, s.seen = s.lo, 0
			return nil, false
		}
		if s.startLong(b) {
			s.longOn = true
			s.hi, s.seen = s.lo, 0
			return nil, false
		}
		s.seen = len(b)
		return nil, false
	}
	i += s.seen
	s.seen = 0
	s.comment, s.inComment = s.inComment, false
	if s.longOn {
		s.work += int64(i + s.long.push(b[:i], true))
		s.longOn, s.longEnd = false, true
	}
	c := b[i]
	s.lo += i + 1
	if c == '\r' {
		s.skipLF = true
		if s.lo < s.hi {
			if s.buf[s.lo] == '\n' {
				s.lo++
			}
			s.skipLF = false
		}
	}
	return b[:i], true
}

// startLong starts decoding the unfinished line b as it arrives when it is
// the first data line of its event and longer than longMin.
func (s *sseReader) startLong(b []byte) bool {
	least := s.longMin
	if least == 0 {
		least = longDataMin
	}
	if s.hasData || len(b) < max(least, len("data: ")) || !bytes.HasPrefix(b, []byte("data:")) {
		return false
	}
	s.longPre = len("data:")
	if b[s.longPre] == ' ' {
		s.longPre++
	}
	if s.long == nil {
		s.long = &chunkStream{}
	}
	s.long.begin(s.longPiece)
	v := b[s.longPre:]
	s.work += int64(len(v) + s.long.push(v, false))
	return true
}

// release ends what the reader holds beyond its stream (an unfinished long
// line's decoder); call it when the stream is over.
func (s *sseReader) release() {
	if s.long != nil {
		s.long.release()
	}
}

// fill reads more bytes, compacting or growing the buffer.
func (s *sseReader) fill() error {
	if s.longOn && s.longLen() >= maxSSELine {
		return errSSELineTooLong
	}
	if s.lo > 0 {
		n := copy(s.buf, s.buf[s.lo:s.hi])
		s.work += int64(n)
		s.lo, s.hi = 0, n
	}
	if s.hi == len(s.buf) {
		if len(s.buf) >= maxSSELine {
			return errSSELineTooLong
		}
		nb := make([]byte, 2*len(s.buf))
		s.work += int64(copy(nb, s.buf[:s.hi]))
		s.buf = nb
	}
	n, err := s.r.Read(s.buf[s.hi:])
	s.work += int64(n)
	if n > 0 {
		s.at = s.since()
		s.hi += n
	}
	if err != nil {
		s.err = err
	}
	return nil
}

// clip returns at most n bytes of b, for error messages.
func clip(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
