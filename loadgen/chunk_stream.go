package loadgen

import "iter"

// A long SSE data line (a chunk carrying a large payload) is decoded while
// its bytes arrive, not in one step after its last byte: each read's bytes
// are copied once into a pieceStore and walked once by the chunk scanner,
// which runs as a coroutine (iter.Pull) that suspends where the bytes run
// out and resumes with the next read's. So the reader's work per read stays
// proportional to the read, whatever the line's length, and on the
// reactor's loop no stream's large event holds up the other streams' reads
// (and so their timestamps) for longer than one read's work. The decoded
// chunk is the one decodeChunk gives for the whole payload (the same
// scanner, fed in pieces; FuzzSSEReader checks it at every split); where
// the scanner gives up, encoding/json decodes the whole payload after its
// last byte, as for any event.

// pieceSize is the size of a pieceStore's pieces (bytes).
const pieceSize = 64 << 10

// pieceStore keeps a payload's bytes in pieces of size bytes, all full
// but the last, so appending never copies what is already kept.
type pieceStore struct {
	size int
	bufs [][]byte
	n    int
}

// write appends b.
func (p *pieceStore) write(b []byte) {
	for len(b) > 0 {
		if len(p.bufs) == 0 || len(p.bufs[len(p.bufs)-1]) == p.size {
			p.bufs = append(p.bufs, make([]byte, 0, p.size))
		}
		last := &p.bufs[len(p.bufs)-1]
		k := min(len(b), p.size-len(*last))
		*last = append(*last, b[:k]...)
		p.n += k
		b = b[k:]
	}
}

// span returns the bytes [from, to): a slice of one piece when they lie in
// one, else a copy.
func (p *pieceStore) span(from, to int) []byte {
	if from == to {
		return nil
	}
	z := p.size
	if k := from / z; k == (to-1)/z {
		return p.bufs[k][from-k*z : to-k*z]
	}
	out := make([]byte, 0, to-from)
	for off := from; off < to; {
		k := off / z
		end := min(to, (k+1)*z)
		out = append(out, p.bufs[k][off-k*z:end-k*z]...)
		off = end
	}
	return out
}

// chunkStream decodes one JSON payload into a chunk as its bytes arrive.
// begin starts a payload, push hands it each read's bytes (final: the
// last), result gives the decoded chunk once the payload is complete.
type chunkStream struct {
	store pieceStore
	sc    scanner
	ch    chunk
	err   error
	done  bool // the scanner returned (err is its verdict)
	final bool // the payload is complete
	next  func() (struct{}, bool)
	stop  func()
	yield func(struct{}) bool // the coroutine's, while it runs
	whole []byte              // the payload in one slice, once bytes asked for it
}

// begin starts decoding a new payload, abandoning any unfinished one; its
// bytes are kept in pieces of piece bytes (0: pieceSize).
func (d *chunkStream) begin(piece int) {
	d.release()
	if piece <= 0 {
		piece = pieceSize
	}
	d.store = pieceStore{size: piece}
	d.sc = scanner{src: &d.store}
	d.ch.reset()
	d.err, d.done, d.final, d.whole = nil, false, false, nil
	d.sc.pull = d.pullFunc
	d.next, d.stop = iter.Pull(d.run)
}

// run is the coroutine: the scanner over the payload.
func (d *chunkStream) run(yield func(struct{}) bool) {
	d.yield = yield
	d.err = d.sc.chunk(&d.ch)
	d.done = true
}

// pullFunc is the scanner's pull: it moves b on to the bytes kept since
// (the same piece, longer, or the next one), suspending the coroutine
// until push brings some; false once the payload is complete and read.
func (d *chunkStream) pullFunc() bool {
	s := &d.sc
	for {
		k := s.base / d.store.size
		if k < len(d.store.bufs) && len(d.store.bufs[k]) > len(s.b) {
			s.b = d.store.bufs[k]
			return true
		}
		if len(s.b) == d.store.size && k+1 < len(d.store.bufs) {
			s.i -= len(s.b)
			s.base += len(s.b)
			s.b = d.store.bufs[k+1][:0]
			continue
		}
		if d.final || !d.yield(struct{}{}) {
			return false
		}
	}
}

// push keeps b, the payload's next bytes (final: its last), and runs the
// scanner over them. It returns how many bytes the scanner walked.
func (d *chunkStream) push(b []byte, final bool) int {
	d.store.write(b)
	d.final = final
	if d.done {
		return 0
	}
	before := d.sc.pos()
	d.next()
	return d.sc.pos() - before
}

// n is the number of payload bytes kept.
func (d *chunkStream) n() int { return d.store.n }

// result is the decoded chunk and the scanner's verdict (errScan: leave
// the payload to encoding/json) once the payload is complete.
func (d *chunkStream) result() (*chunk, error) { return &d.ch, d.err }

// bytes returns the whole payload in one slice (a copy, made once).
func (d *chunkStream) bytes() []byte {
	if d.whole == nil {
		d.whole = make([]byte, 0, d.store.n)
		for _, b := range d.store.bufs {
			d.whole = append(d.whole, b...)
		}
	}
	return d.whole
}

// release ends an unfinished decode (its stream ended mid-line), so its
// coroutine does not outlive the stream.
func (d *chunkStream) release() {
	if d.stop != nil {
		d.stop()
		d.next, d.stop = nil, nil
	}
}
