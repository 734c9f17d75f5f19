package loadgen

import (
	"encoding/binary"
	"time"
)

// eventLog holds a request's token events while it is in flight, compactly:
// per event a zig-zag varint of the gap in ns from the previous event (the
// first from offset 0) and a varint of tokens<<1 | reasoning. A 10 ms gap
// takes 4 bytes and a one-token event 1, so an event costs ~5 B instead of
// a TokenEvent's 24 B; the record's Events are built, exactly, when the
// response ends.
type eventLog struct {
	b    []byte
	last time.Duration
	n    int
}

// eventLogPrealloc is the first capacity reserved (bytes, ~12 events).
const eventLogPrealloc = 64

func (l *eventLog) add(e TokenEvent) {
	if l.b == nil {
		l.b = make([]byte, 0, eventLogPrealloc)
	}
	l.b = binary.AppendVarint(l.b, int64(e.At-l.last))
	l.last = e.At
	v := uint64(e.Tokens) << 1
	if e.Reasoning {
		v |= 1
	}
	l.b = binary.AppendUvarint(l.b, v)
	l.n++
}

// appendTo appends the logged events to dst in order.
func (l *eventLog) appendTo(dst []TokenEvent) []TokenEvent {
	var at time.Duration
	for b := l.b; len(b) > 0; {
		d, k := binary.Varint(b)
		b = b[k:]
		v, k2 := binary.Uvarint(b)
		b = b[k2:]
		at += time.Duration(d)
		dst = append(dst, TokenEvent{At: at, Tokens: int(v >> 1), Reasoning: v&1 == 1})
	}
	return dst
}
